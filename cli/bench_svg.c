/*
 * `bench --history --svg FILE`: each figure of the history as a line over
 * the runs, in a hand-written SVG (no plotting library: a line chart is a
 * polyline per figure, axes, a legend).  Runs are spaced evenly (run
 * order, not time: a chart of a machine benchmarked twice a year and then
 * daily stays readable); the y axis starts at 0 so a halving looks like
 * one.  Every text is escaped: paths can hold '&' and '<'.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

#define W 900
#define H 420
#define LEFT 70
#define RIGHT 20
#define TOP 40
#define BOTTOM 60
#define LEGEND_ROW 18

static const char *const colors[] = {
	"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b",
	"#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};

static void put_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

/* A round step for about 5 grid lines up to max. */
static double grid_step(double max)
{
	double raw = max / 5, mag = 1, m;

	while (mag * 10 <= raw)
		mag *= 10;
	while (mag > raw)
		mag /= 10;
	m = raw / mag;
	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * mag;
}

int bench_svg_write(const char *path, struct bench_run *const *runs, size_t n)
{
	const char *names[BENCH_MAX_FIGURES * 2];
	size_t nn = 0;
	double max = 0;
	FILE *f;

	for (size_t r = 0; r < n; r++)
		for (size_t k = 0; k < runs[r]->nfig; k++) {
			size_t i = 0;
			while (i < nn && strcmp(names[i], runs[r]->fig[k].name))
				i++;
			if (i == nn && nn < sizeof(names) / sizeof(names[0]))
				names[nn++] = runs[r]->fig[k].name;
			if (runs[r]->fig[k].mibs > max)
				max = runs[r]->fig[k].mibs;
		}
	if (max <= 0)
		max = 1;
	double step = grid_step(max);
	double top = step;
	while (top < max)
		top += step;
	int legend_h = (int)((nn + 1) / 2) * LEGEND_ROW;
	int total_h = H + legend_h;
	double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;

	f = fopen(path, "we");
	if (!f)
		return -errno;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
	        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
	        "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
	        "font-size=\"12\">\n", W, total_h, W, total_h);
	fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", W,
	        total_h);
	fprintf(f, "<text x=\"%d\" y=\"22\" font-size=\"15\">blkmirror bench: "
	        "MiB/s over %zu run%s (", LEFT, n, n == 1 ? "" : "s");
	for (size_t i = 0; i < runs[n - 1]->ncomp; i++) {
		fprintf(f, "%s%c = ", i ? ", " : "", bench_letter(i));
		put_text(f, runs[n - 1]->comp[i].path);
	}
	fprintf(f, ")</text>\n");
	/* grid and y labels */
	for (double v = 0; v <= top + step / 2; v += step) {
		double y = TOP + ph - v / top * ph;
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		        "stroke=\"#ddd\"/>\n<text x=\"%d\" y=\"%.1f\" "
		        "text-anchor=\"end\">%g</text>\n", LEFT, y, LEFT + pw, y,
		        LEFT - 6, y + 4, v);
	}
	/* x labels: the date of each run (thinned to about 10) */
	size_t every = n > 10 ? (n + 9) / 10 : 1;
	for (size_t r = 0; r < n; r++) {
		double x = LEFT + (n == 1 ? pw / 2 : pw * (double)r / (double)(n - 1));
		if (r % every && r != n - 1)
			continue;
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
		        "%.10s</text>\n", x, TOP + (int)ph + 18, runs[r]->time);
	}
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%.1f\" "
	        "stroke=\"black\"/>\n<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" "
	        "y2=\"%.1f\" stroke=\"black\"/>\n", LEFT, TOP, LEFT, TOP + ph,
	        LEFT, TOP + ph, LEFT + pw, TOP + ph);
	/* one polyline per figure (a run without the figure breaks nothing:
	 * the line joins the runs that have it) */
	for (size_t k = 0; k < nn; k++) {
		const char *color = colors[k % (sizeof(colors) / sizeof(colors[0]))];
		const char *dash = k >= sizeof(colors) / sizeof(colors[0])
		                 ? " stroke-dasharray=\"6 3\"" : "";
		fprintf(f, "<polyline class=\"figure\" fill=\"none\" stroke=\"%s\" "
		        "stroke-width=\"2\"%s points=\"", color, dash);
		for (size_t r = 0; r < n; r++) {
			double v = bench_run_figure(runs[r], names[k]);
			if (v < 0)
				continue;
			double x = LEFT + (n == 1 ? pw / 2
			                          : pw * (double)r / (double)(n - 1));
			fprintf(f, "%.1f,%.1f ", x, TOP + ph - v / top * ph);
		}
		fprintf(f, "\"><title>");
		put_text(f, names[k]);
		fprintf(f, "</title></polyline>\n");
		int lx = LEFT + (int)(k % 2) * (W - LEFT) / 2;
		int ly = H + (int)(k / 2) * LEGEND_ROW;
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		        "stroke=\"%s\" stroke-width=\"2\"%s/>\n<text x=\"%d\" "
		        "y=\"%d\">", lx, ly - 4, lx + 24, ly - 4, color, dash,
		        lx + 30, ly);
		put_text(f, names[k]);
		fprintf(f, "</text>\n");
	}
	fprintf(f, "</svg>\n");
	if (ferror(f)) {
		fclose(f);
		return -EIO;
	}
	return fclose(f) == 0 ? 0 : -errno;
}
