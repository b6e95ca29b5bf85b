/* kernelet-ctl metrics --listen HOST:PORT: a minimal HTTP/1.0 server for Prometheus'
 * scrapes, in its own process beside kerneletd (as exporters are), so the daemon's event
 * loop carries no HTTP. One client at a time: a scrape is a few kilobytes every few
 * seconds. Each scrape opens a fresh administration connection, so a restarted daemon is
 * seen again and a stopped one shows as kernelet_up 0. */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "ctl.h"

#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* "HOST:PORT" or "[V6ADDR]:PORT" into host and port; -1 when malformed. */
static int split_addr(const char *addr, char *host, size_t n, const char **port)
{
    const char *colon = strrchr(addr, ':');
    size_t len;

    if (!colon || !colon[1])
        return -1;
    len = (size_t)(colon - addr);
    if (len >= 2 && addr[0] == '[' && addr[len - 1] == ']') {
        addr++;
        len -= 2;
    }
    if (len == 0 || len >= n)
        return -1;
    memcpy(host, addr, len);
    host[len] = 0;
    *port = colon + 1;
    return 0;
}

static int open_listener(const char *addr)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
    char host[256];
    const char *port;
    int fd, one = 1, rc;

    if (split_addr(addr, host, sizeof(host), &port) != 0) {
        fprintf(stderr, "kernelet-ctl: --listen wants HOST:PORT, not '%s'\n", addr);
        return -1;
    }
    if ((rc = getaddrinfo(host, port, &hints, &ai)) != 0) {
        fprintf(stderr, "kernelet-ctl: %s: %s\n", addr, gai_strerror(rc));
        return -1;
    }
    fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 16) != 0) {
        fprintf(stderr, "kernelet-ctl: cannot listen on %s: %m\n", addr);
        if (fd >= 0)
            close(fd);
        fd = -1;
    }
    freeaddrinfo(ai);
    return fd;
}

/* The request's head, up to the blank line (or as much as fits); a client that sends
 * nothing for 5 s is dropped, so one stuck client cannot stop the scrapes. */
static int read_head(int fd, char *buf, size_t cap)
{
    struct timeval tv = {.tv_sec = 5};
    size_t got = 0;

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (got + 1 < cap) {
        ssize_t n = read(fd, buf + got, cap - 1 - got);
        if (n <= 0)
            return -1;
        got += (size_t)n;
        buf[got] = 0;
        if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
            break;
    }
    return 0;
}

/* The exposition text of one scrape, in a malloc'd buffer. */
static char *scrape(const char *socket_path, size_t *len)
{
    struct ctl_snapshot s;
    char *text = NULL;
    FILE *f = open_memstream(&text, len);
    int fd;

    if (!f)
        return NULL;
    fd = ctl_connect(socket_path, 1);
    if (fd >= 0 && ctl_snapshot_take(fd, &s) == 0) {
        ctl_metrics_write(f, &s);
        ctl_snapshot_free(&s);
    } else {
        ctl_metrics_write(f, NULL);
    }
    if (fd >= 0)
        close(fd);
    fclose(f);
    return text;
}

static void reply(int fd, const char *status, const char *type, const char *body, size_t n)
{
    char head[256];
    int h = snprintf(head, sizeof(head),
                     "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n", status, type, n);

    if (write(fd, head, (size_t)h) != h)
        return;
    while (n) {
        ssize_t w = write(fd, body, n);
        if (w <= 0)
            return;
        body += w;
        n -= (size_t)w;
    }
}

static void serve_one(int client, const char *socket_path)
{
    char head[4096];
    size_t len;
    char *text;

    if (read_head(client, head, sizeof(head)) != 0)
        return;
    if (strncmp(head, "GET ", 4) != 0) {
        reply(client, "405 Method Not Allowed", "text/plain", "GET only\n", 9);
        return;
    }
    if (strncmp(head + 4, "/metrics ", 9) != 0 && strncmp(head + 4, "/metrics?", 9) != 0) {
        reply(client, "404 Not Found", "text/plain", "try /metrics\n", 13);
        return;
    }
    if (!(text = scrape(socket_path, &len))) {
        reply(client, "500 Internal Server Error", "text/plain", "out of memory\n", 14);
        return;
    }
    reply(client, "200 OK", CONTENT_TYPE, text, len);
    free(text);
}

int ctl_metrics_serve(const char *addr, const char *socket_path)
{
    int fd = open_listener(addr);

    if (fd < 0)
        return 1;
    signal(SIGPIPE, SIG_IGN); /* a scraper that hangs up must not end the exporter */
    fprintf(stderr, "kernelet-ctl: serving metrics of %s on http://%s/metrics\n", socket_path,
            addr);
    for (;;) {
        int client = accept(fd, NULL, NULL);
        if (client < 0) {
            if (errno != EINTR)
                usleep(100000); /* out of descriptors, say: do not spin */
            continue;
        }
        serve_one(client, socket_path);
        close(client);
    }
}
