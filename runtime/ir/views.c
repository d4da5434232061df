/* SPDX-License-Identifier: MIT */
/* views.c — the view and series table (views.h). */
#include "ir/views.h"

#include <string.h>

const ml_view_info ml_views[MV_COUNT] = {
    [MV_REQUESTED] = {"requested", 1, {VIEW_REQUESTED}, false, true, false, ""},
    [MV_DEVICE] = {"device", 1, {VIEW_DEVICE}, true, true, false, "device_"},
    [MV_TORCH] = {"torch", 2, {VIEW_TORCH_ALLOCATED, VIEW_TORCH_RESERVED}, false, false, true, NULL},
};

const ml_series_info ml_series[VIEW_COUNT] = {
    [VIEW_REQUESTED] = {"requested", NULL, "requested", "requested", "measured req",
                        "requested bytes", MV_REQUESTED},
    [VIEW_DEVICE] = {"device", NULL, "device", "device", "measured dev", "device bytes", MV_DEVICE},
    [VIEW_TORCH_ALLOCATED] = {"torch allocated", "allocated", "torch_allocated", "torch allocated",
                              "measured torch alloc", "torch allocated bytes", MV_TORCH},
    [VIEW_TORCH_RESERVED] = {"torch reserved", "reserved", "torch_reserved", "torch reserved",
                             "measured torch res", "torch reserved bytes", MV_TORCH},
};

const char *const ml_mem_view_names[VIEW_COUNT] = {
    [VIEW_REQUESTED] = "requested",
    [VIEW_DEVICE] = "device",
    [VIEW_TORCH_ALLOCATED] = "torch allocated",
    [VIEW_TORCH_RESERVED] = "torch reserved",
};

int ml_view_lookup(const char *text, size_t len) {
    for (int v = 0; v < MV_COUNT; v++)
        if (strlen(ml_views[v].name) == len && !memcmp(ml_views[v].name, text, len))
            return v;
    return -1;
}
