#include "common/brace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errors.h"

/* The template is a sequence of parts: literal text, then a group, literal, group, ... */
struct group {
    int is_list;
    /* range */
    uint64_t a, step, n; /* values a, a+step.. (or a-step.. when desc), n of them */
    int desc;
    int width;
    /* list: items are offsets into the template copy, NUL-separated */
    char **items;
};

struct hd_brace {
    char *copy;                         /* owns the literal texts and list items */
    char *lit[HD_BRACE_MAX_GROUPS + 1]; /* literal before group i, and the tail */
    struct group g[HD_BRACE_MAX_GROUPS];
    size_t ng;
    uint64_t count;
};

void hd_brace_free(struct hd_brace *t)
{
    size_t i;

    if (!t)
        return;
    for (i = 0; i < t->ng; i++)
        free(t->g[i].items);
    free(t->copy);
    free(t);
}

static int fail(char *err, size_t errlen, const char *msg)
{
    if (err && errlen)
        snprintf(err, errlen, "%s", msg);
    return HD_EBADARG;
}

static int parse_num(const char *s, size_t n, uint64_t *v, int *lead0)
{
    size_t i;
    uint64_t x = 0;

    if (n == 0 || n > 18)
        return -1;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *v = x;
    *lead0 = n > 1 && s[0] == '0';
    return 0;
}

/* body: the text between '{' and '}' (NUL-terminated, inside t->copy). */
static int parse_group(char *body, struct group *g, char *err, size_t errlen)
{
    char *dots = strstr(body, "..");
    size_t i, n;

    memset(g, 0, sizeof(*g));
    if (dots) {
        char *b = dots + 2, *dots2 = strstr(b, "..");
        uint64_t a, z, step = 1;
        int l0a, l0z, l0s;
        size_t na = (size_t)(dots - body), nz = dots2 ? (size_t)(dots2 - b) : strlen(b);
        if (parse_num(body, na, &a, &l0a) < 0 || parse_num(b, nz, &z, &l0z) < 0 ||
            (dots2 && parse_num(dots2 + 2, strlen(dots2 + 2), &step, &l0s) < 0))
            return fail(err, errlen,
                        "a range is {FIRST..LAST} or {FIRST..LAST..STEP} with "
                        "decimal numbers");
        if (step == 0)
            return fail(err, errlen, "a range step must be positive");
        g->a = a;
        g->step = step;
        g->desc = a > z;
        g->n = (g->desc ? a - z : z - a) / step + 1;
        if (l0a || l0z)
            g->width = (int)(na > nz ? na : nz);
        return 0;
    }
    /* a comma list */
    n = 1;
    for (i = 0; body[i]; i++)
        n += body[i] == ',';
    g->is_list = 1;
    g->n = n;
    g->items = calloc(n, sizeof(*g->items));
    if (!g->items)
        return -ENOMEM;
    g->items[0] = body;
    for (i = 0, n = 1; body[i]; i++)
        if (body[i] == ',') {
            body[i] = '\0';
            g->items[n++] = body + i + 1;
        }
    if (n == 1)
        return fail(err, errlen, "a group is a range {A..B} or a list {x,y}");
    return 0;
}

int hd_brace_parse(const char *s, struct hd_brace **out, char *err, size_t errlen)
{
    struct hd_brace *t;
    size_t len = s ? strlen(s) : 0;
    char *p;
    int rc;

    *out = NULL;
    if (len == 0 || len > HD_BRACE_MAX_LEN)
        return fail(err, errlen, "a template is 1..1024 bytes");
    t = calloc(1, sizeof(*t));
    if (!t)
        return -ENOMEM;
    t->copy = strdup(s);
    if (!t->copy) {
        free(t);
        return -ENOMEM;
    }
    t->count = 1;
    p = t->copy;
    t->lit[0] = p;
    for (;;) {
        char *open = strchr(p, '{'), *close;
        if (!open) {
            if (strchr(p, '}')) {
                rc = fail(err, errlen, "unbalanced '}' in the template");
                goto fail;
            }
            break;
        }
        close = strchr(open + 1, '}');
        if (!close || memchr(open + 1, '{', (size_t)(close - open - 1)) ||
            memchr(p, '}', (size_t)(open - p))) {
            rc = fail(err, errlen, "unbalanced or nested braces in the template");
            goto fail;
        }
        if (close == open + 1) {
            rc = fail(err, errlen, "empty {} in the template");
            goto fail;
        }
        if (t->ng == HD_BRACE_MAX_GROUPS) {
            rc = fail(err, errlen, "at most 8 brace groups in a template");
            goto fail;
        }
        *open = '\0';
        *close = '\0';
        if ((rc = parse_group(open + 1, &t->g[t->ng], err, errlen)) < 0) {
            t->ng++; /* frees its items */
            goto fail;
        }
        if (t->g[t->ng].n > HD_BRACE_MAX_NAMES / t->count) {
            t->ng++;
            rc = fail(err, errlen, "the template names too many objects");
            goto fail;
        }
        t->count *= t->g[t->ng].n;
        t->ng++;
        p = close + 1;
        t->lit[t->ng] = p;
    }
    *out = t;
    return 0;
fail:
    hd_brace_free(t);
    return rc;
}

uint64_t hd_brace_count(const struct hd_brace *t)
{
    return t->count;
}

int hd_brace_at(const struct hd_brace *t, uint64_t i, struct hd_buf *out)
{
    uint64_t idx[HD_BRACE_MAX_GROUPS];
    size_t k;

    if (i >= t->count)
        return HD_EBADARG;
    for (k = t->ng; k-- > 0;) { /* the rightmost group varies fastest */
        idx[k] = i % t->g[k].n;
        i /= t->g[k].n;
    }
    for (k = 0; k < t->ng; k++) {
        const struct group *g = &t->g[k];
        hd_buf_puts(out, t->lit[k]);
        if (g->is_list) {
            hd_buf_puts(out, g->items[idx[k]]);
        } else {
            uint64_t v = g->desc ? g->a - idx[k] * g->step : g->a + idx[k] * g->step;
            hd_buf_printf(out, "%0*llu", g->width, (unsigned long long)v);
        }
    }
    hd_buf_puts(out, t->lit[t->ng]);
    return out->oom ? -ENOMEM : 0;
}
