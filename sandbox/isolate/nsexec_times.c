//go:build linux && cgo

// nsexec_times.c stamps the set-up's phases (docs/timings.md): each
// act_mark records the CLOCK_MONOTONIC time at which a phase ended, and
// act_send_marks writes those of one process on the spec socket, one
// MSG_TIMES line, where the spec asked for them (act_sp.timings: act …
// --timings). The parent turns them into phases on its own clock
// (marks.go). A stamp is a vDSO call, about 20 ns; without --timings
// nothing is sent.

#include "nsexec.h"

long long act_start_ns;

#define MAX_MARKS 48

static struct {
	const char *name;
	long long ns;
} marks[MAX_MARKS];
static int nmarks, mark_from;

long long act_now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void act_mark(const char *phase) {
	if (nmarks < MAX_MARKS) {
		marks[nmarks].name = phase;
		marks[nmarks++].ns = act_now_ns();
	}
}

void act_marks_forked(void) { mark_from = nmarks; }

// act_marks_save and act_marks_restore bracket a child that shares this
// memory (spawn_command's): what it marked and sent as its own is
// forgotten.
long act_marks_save(void) { return (long)nmarks << 16 | mark_from; }

void act_marks_restore(long saved) {
	nmarks = (int)(saved >> 16);
	mark_from = (int)(saved & 0xffff);
}

void act_send_marks(const char *who) {
	if (!act_sp.timings || act_sock < 0)
		return;
	char line[MAX_MARKS * 64 + 64];
	int n = snprintf(line, sizeof line, "%c%s %lld", MSG_TIMES, who, act_start_ns);
	for (int i = mark_from; i < nmarks && n < (int)sizeof line - 64; i++)
		n += snprintf(line + n, sizeof line - n, " %s %lld", marks[i].name, marks[i].ns);
	line[n++] = '\n';
	ssize_t r = write(act_sock, line, n);
	(void)r;
}
