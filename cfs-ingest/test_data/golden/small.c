#ifndef SMALL_H
#define SMALL_H

#include <stdlib.h>

/* A point on the plane. */
struct point {
    int x;
    int y;
};

typedef struct node {
    struct node *next;
    void *value;
} node_t;

typedef int (*compare_fn)(const void *, const void *);

enum color { RED, GREEN, BLUE };

static const int max_points = 64;
int point_count;

#define SQUARE(x) ((x) * (x))

/* Distance squared between two points. */
static int distance2(const struct point *a, const struct point *b) {
    return SQUARE(a->x - b->x) + SQUARE(a->y - b->y);
}

node_t *node_push(node_t *head, void *value);

/* A macro the grammar cannot expand joins the function after it, still a symbol. */
DEFINE_LIST_OPS(node)

node_t *node_push(node_t *head, void *value) {
    node_t *n = malloc(sizeof *n);
    n->next = head;
    n->value = value;
    return n;
}

#endif /* SMALL_H */
