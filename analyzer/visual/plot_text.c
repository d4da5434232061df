/* SPDX-License-Identifier: MIT */
/* plot_text.c — text in the SVG of `memlife plot` (plot.h, plot_int.h): escaped for XML, so that
 * any name a schedule or a snapshot holds is safe to write into the picture. */
#include "plot_int.h"

void plot_xml_escape(ml_str *out, const char *s) {
    for (; *s; s++) {
        switch (*s) {
        case '&': ml_str_append(out, "&amp;", 5); break;
        case '<': ml_str_append(out, "&lt;", 4); break;
        case '>': ml_str_append(out, "&gt;", 4); break;
        case '"': ml_str_append(out, "&quot;", 6); break;
        case '\'': ml_str_append(out, "&apos;", 6); break;
        default:
            /* Control characters are not allowed in XML 1.0 at all. */
            if ((unsigned char)*s >= 0x20 || *s == '\t' || *s == '\n')
                ml_str_append(out, s, 1);
        }
    }
}

void plot_text(ml_str *o, double x, double y, const char *attrs, const char *s) {
    ml_str_printf(o, "<text x=\"%.1f\" y=\"%.1f\" %s>", x, y, attrs);
    plot_xml_escape(o, s);
    ml_str_printf(o, "</text>\n");
}
