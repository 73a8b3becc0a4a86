# component_dies_cli_answers with the server under strace -f (see there).
STRACE=1 . "$(dirname "$0")/component_dies_cli_answers.sh"
