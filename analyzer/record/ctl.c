/*
 * ctl.c — the client of the preload's control endpoint (ctl.h): finds the
 * sockets of a run or a process, exchanges one command and its one-line
 * answer, parses `status` (with jansson).
 *
 * Every wait is bounded: the connect by SO_SNDTIMEO (a UNIX stream connect
 * blocks while the server's backlog is full, and gives up with EAGAIN when
 * the send timeout runs out), the answer by poll with a deadline. Writes
 * use MSG_NOSIGNAL so a server that closed early cannot kill us with
 * SIGPIPE.
 *
 * Trust: a socket is only believed when its directory is ours and
 * writable by nobody else (rundir.h), the socket file itself is ours,
 * and the process listening on it runs as us (or root: SO_PEERCRED after
 * the connect). Otherwise another user could plant a socket at
 * "<pid>.ctl" in a shared directory and answer with forged numbers. The
 * connect goes through /proc/self/fd/N/<name> of the directory fd that
 * was checked, so the check and the connect see the same directory (and
 * paths longer than sun_path fit). Single-threaded; no globals.
 */
#include "ctl.h"
#include "control_proto.h"
#include "rundir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

/* ---- finding sockets ---------------------------------------------------- */

/* The pid of a "<digits>.ctl" name, or 0. */
static uint64_t ctl_name_pid(const char *name)
{
	uint64_t pid = 0;
	const char *p = name;

	for (; isdigit((unsigned char)*p); p++) {
		if (pid > UINT64_MAX / 10 - 1)
			return 0;
		pid = pid * 10 + (uint64_t)(*p - '0');
	}
	return p != name && !strcmp(p, VRT_CONTROL_SUFFIX) ? pid : 0;
}

static int cmp_target(const void *a, const void *b)
{
	const struct vrt_ctl_target *x = a, *y = b;

	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

int vrt_ctl_list_dir(const char *dir, struct vrt_ctl_target **targets,
                     size_t *n, char *err, size_t errsz)
{
	struct vrt_ctl_target *v = NULL, *nv;
	size_t cnt = 0, cap = 0;
	struct dirent *de;
	DIR *d = opendir(dir);
	char why[128];

	*targets = NULL;
	*n = 0;
	if (!d) {
		snprintf(err, errsz, "cannot open: %s", strerror(errno));
		return -1;
	}
	if (vrt_rundir_check(dirfd(d), geteuid(), why, sizeof(why))) {
		snprintf(err, errsz,
		         "refusing a run directory %s: another user could "
		         "have planted its sockets",
		         why);
		closedir(d);
		return -1;
	}
	while ((de = readdir(d))) {
		uint64_t pid = ctl_name_pid(de->d_name);
		if (!pid)
			continue;
		if (cnt == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				snprintf(err, errsz, "out of memory");
				return -1;
			}
			v = nv;
		}
		v[cnt].pid = pid;
		snprintf(v[cnt].path, sizeof(v[cnt].path), "%s/%s", dir,
		         de->d_name);
		cnt++;
	}
	closedir(d);
	if (cnt)
		qsort(v, cnt, sizeof(*v), cmp_target);
	*targets = v;
	*n = cnt;
	return 0;
}

/* Reads a small /proc file whole; NULL on failure (errno set). */
static char *read_small(const char *path, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1), *nb;
	ssize_t r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf) {
		int saved = fd < 0 ? errno : ENOMEM;
		if (fd >= 0)
			close(fd);
		free(buf);
		errno = saved;
		return NULL;
	}
	for (;;) {
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			if (cap >= (1u << 22))
				break; /* an environment this big is cut */
			nb = realloc(buf, cap * 2 + 1);
			if (!nb)
				break;
			buf = nb;
			cap *= 2;
		}
	}
	if (r < 0) {
		int saved = errno;
		close(fd);
		free(buf);
		errno = saved;
		return NULL;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
}

static uint64_t proc_ppid(uint64_t pid)
{
	char path[64], *s, *p;
	size_t len;
	unsigned long long ppid = 0;

	snprintf(path, sizeof(path), "/proc/%" PRIu64 "/stat", pid);
	s = read_small(path, &len);
	if (!s)
		return 0;
	/* "pid (comm) state ppid ...": comm may hold spaces and ')'. */
	p = strrchr(s, ')');
	if (p && sscanf(p + 1, " %*c %llu", &ppid) != 1)
		ppid = 0;
	free(s);
	return ppid;
}

static int is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* 1 when the memory map of pid holds the preload, 0 when it can be read
 * and does not, -1 when it cannot be read (another user's process): then
 * the caller goes on as if it were traced, and its socket decides. */
static int traced(uint64_t pid)
{
	char path[64], line[4096];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%" PRIu64 "/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/libvramtrace") != NULL;
	fclose(f);
	return found;
}

int vrt_ctl_run_dir(uint64_t pid, char *dir, size_t dirsz, char *err,
                    size_t errsz)
{
	char path[64], cwd[4096];
	char *env, *p;
	size_t len, i;
	ssize_t cl;
	uint64_t anc;

	snprintf(path, sizeof(path), "/proc/%" PRIu64 "/cwd", pid);
	cl = readlink(path, cwd, sizeof(cwd) - 1);
	if (cl < 0) {
		snprintf(err, errsz, "%s",
		         errno == ENOENT ? "no such process" : strerror(errno));
		return -1;
	}
	cwd[cl] = '\0';
	if (traced(pid) == 0) {
		snprintf(err, errsz,
		         "not traced: libvramtrace.so is not loaded in it "
		         "(start it with vramtrace record -- COMMAND)");
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/%" PRIu64 "/environ", pid);
	env = read_small(path, &len);
	for (p = env; env && p < env + len; p += strlen(p) + 1) {
		if (strncmp(p, "VRAMTRACE_OUT=", 14) || !p[14])
			continue;
		if (p[14] == '/')
			snprintf(dir, dirsz, "%s", p + 14);
		else
			snprintf(dir, dirsz, "%s/%s", cwd, p + 14);
		free(env);
		return 0;
	}
	free(env);
	/* The preload's default, chosen by this process or, for a fork
	 * child (whose /proc environ is its parent's first one), by the
	 * nearest ancestor that chose it. */
	snprintf(dir, dirsz, "%s/vramtrace-run-%" PRIu64, cwd, pid);
	if (is_dir(dir))
		return 0;
	for (anc = proc_ppid(pid), i = 0; anc > 1 && i < 16;
	     anc = proc_ppid(anc), i++) {
		snprintf(dir, dirsz, "%s/vramtrace-run-%" PRIu64, cwd, anc);
		if (is_dir(dir))
			return 0;
	}
	snprintf(dir, dirsz, "%s/vramtrace-run-%" PRIu64, cwd, pid);
	return 0;
}

/* ---- one request -------------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Opens the directory of the socket at path, checks it and the socket,
 * and connects fd through /proc/self/fd of that directory. Returns
 * VRT_CTL_ANSWERED (connected), VRT_CTL_UNTRUSTED, VRT_CTL_GONE (no such
 * socket) or VRT_CTL_FAILED with errno, with err filled on refusal. */
static enum vrt_ctl_result connect_trusted(int fd, const char *path,
                                           char *err, size_t errsz)
{
	struct sockaddr_un a;
	struct stat st;
	const char *slash = strrchr(path, '/'), *name;
	char dirbuf[4096], why[128];
	int dfd, rc, saved;

	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	name = slash ? slash + 1 : path;
	if (slash && (size_t)(slash - path) >= sizeof(dirbuf)) {
		errno = ENAMETOOLONG;
		return VRT_CTL_FAILED;
	}
	if (slash) {
		memcpy(dirbuf, path, (size_t)(slash - path));
		dirbuf[slash - path] = '\0';
	} else {
		snprintf(dirbuf, sizeof(dirbuf), ".");
	}
	dfd = open(slash && !dirbuf[0] ? "/" : dirbuf,
	           O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? VRT_CTL_GONE : VRT_CTL_FAILED;
	if (vrt_rundir_check(dfd, geteuid(), why, sizeof(why))) {
		snprintf(err, errsz, "refused: its run directory is %s", why);
		close(dfd);
		return VRT_CTL_UNTRUSTED;
	}
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		saved = errno;
		close(dfd);
		errno = saved;
		return saved == ENOENT ? VRT_CTL_GONE : VRT_CTL_FAILED;
	}
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		if (!S_ISSOCK(st.st_mode))
			snprintf(err, errsz, "refused: not a socket");
		else
			snprintf(err, errsz,
			         "refused: the socket is owned by uid %u, not "
			         "by this user (uid %u)",
			         (unsigned)st.st_uid, (unsigned)geteuid());
		close(dfd);
		return VRT_CTL_UNTRUSTED;
	}
	if ((size_t)snprintf(a.sun_path, sizeof(a.sun_path),
	                     "/proc/self/fd/%d/%s", dfd,
	                     name) >= sizeof(a.sun_path)) {
		close(dfd);
		errno = ENAMETOOLONG;
		return VRT_CTL_FAILED;
	}
	rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	saved = errno;
	close(dfd);
	errno = saved;
	return rc ? VRT_CTL_FAILED : VRT_CTL_ANSWERED;
}

/* The process that listens must be us (or root): 0, or -1 with err. */
static int peer_trusted(int fd, char *err, size_t errsz)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		snprintf(err, errsz, "refused: cannot tell who listens: %s",
		         strerror(errno));
		return -1;
	}
	if (cred.uid != geteuid() && cred.uid != 0) {
		snprintf(err, errsz,
		         "refused: the process listening runs as uid %u, not "
		         "as this user (uid %u)",
		         (unsigned)cred.uid, (unsigned)geteuid());
		return -1;
	}
	return 0;
}

enum vrt_ctl_result vrt_ctl_request(const char *path, const char *line,
                                    int timeout_ms, char **answer, char *err,
                                    size_t errsz)
{
	struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
	enum vrt_ctl_result res = VRT_CTL_FAILED;
	char *buf = NULL, *msg = NULL, *nl;
	size_t len = 0, cap = 0, off = 0, mlen;
	int64_t deadline;
	int fd;

	*answer = NULL;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, errsz, "socket: %s", strerror(errno));
		return VRT_CTL_FAILED;
	}
	/* Bounds a connect to a server whose backlog is full. */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)))
		goto sys_fail;
	res = connect_trusted(fd, path, err, errsz);
	if (res == VRT_CTL_UNTRUSTED)
		goto out;
	if (res == VRT_CTL_ANSWERED && peer_trusted(fd, err, errsz)) {
		res = VRT_CTL_UNTRUSTED;
		goto out;
	}
	if (res != VRT_CTL_ANSWERED) {
		int e = res == VRT_CTL_GONE ? ENOENT : errno;
		res = VRT_CTL_FAILED;
		if (e == ECONNREFUSED || e == ENOENT) {
			res = VRT_CTL_GONE;
			snprintf(err, errsz, "%s", strerror(e));
		} else if (e == EACCES || e == EPERM) {
			res = VRT_CTL_DENIED;
			snprintf(err, errsz, "permission denied");
		} else if (e == EAGAIN || e == ETIMEDOUT || e == EINPROGRESS) {
			res = VRT_CTL_TIMEOUT;
			snprintf(err, errsz, "timed out connecting");
		} else {
			snprintf(err, errsz, "connect: %s", strerror(e));
		}
		goto out;
	}
	res = VRT_CTL_FAILED; /* until an answer is read */
	mlen = strlen(line) + 1;
	msg = malloc(mlen + 1);
	if (!msg) {
		snprintf(err, errsz, "out of memory");
		goto out;
	}
	memcpy(msg, line, mlen - 1);
	msg[mlen - 1] = '\n';
	while (off < mlen) {
		ssize_t w = send(fd, msg + off, mlen - off, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			res = VRT_CTL_TIMEOUT;
			snprintf(err, errsz, "timed out sending");
			goto out;
		}
		if (w < 0)
			goto sys_fail;
		off += (size_t)w;
	}
	deadline = now_ms() + timeout_ms;
	for (;;) {
		struct pollfd pfd = {fd, POLLIN, 0};
		int64_t left = deadline - now_ms();
		ssize_t r;
		int pr;

		if (left <= 0) {
			res = VRT_CTL_TIMEOUT;
			snprintf(err, errsz, "no answer within %d ms",
			         timeout_ms);
			goto out;
		}
		pr = poll(&pfd, 1, (int)left);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			goto sys_fail;
		if (pr == 0)
			continue;
		if (len + 4096 + 1 > cap) {
			char *nb;
			if (cap >= VRT_CTL_MAX_ANSWER) {
				snprintf(err, errsz,
				         "answer longer than %d bytes",
				         VRT_CTL_MAX_ANSWER);
				goto out;
			}
			cap = cap ? cap * 2 : 8192;
			nb = realloc(buf, cap);
			if (!nb) {
				snprintf(err, errsz, "out of memory");
				goto out;
			}
			buf = nb;
		}
		r = recv(fd, buf + len, cap - len - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == ECONNRESET)
			r = 0; /* the server closed without reading all */
		if (r < 0)
			goto sys_fail;
		len += (size_t)r;
		buf[len] = '\0';
		if (r == 0 || memchr(buf, '\n', len))
			break;
	}
	if (!len) {
		snprintf(err, errsz, "closed without an answer");
		goto out;
	}
	nl = memchr(buf, '\n', len);
	if (nl)
		*nl = '\0';
	*answer = buf;
	buf = NULL;
	res = VRT_CTL_ANSWERED;
	goto out;
sys_fail:
	snprintf(err, errsz, "%s", strerror(errno));
out:
	free(buf);
	free(msg);
	close(fd);
	return res;
}

/* ---- status ------------------------------------------------------------- */

static uint64_t num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (json_is_integer(v))
		return json_integer_value(v) > 0
		               ? (uint64_t)json_integer_value(v)
		               : 0;
	if (json_is_real(v) && json_real_value(v) > 0)
		return (uint64_t)json_real_value(v);
	return 0;
}

static void str(json_t *o, const char *key, char *buf, size_t n)
{
	json_t *v = json_object_get(o, key);

	snprintf(buf, n, "%s", json_is_string(v) ? json_string_value(v) : "");
}

int vrt_ctl_parse_status(const char *text, struct vrt_ctl_status *st, char *err,
                         size_t errsz)
{
	json_error_t je;
	json_t *root, *devs, *d, *phases, *v;
	const char *name;
	size_t i;

	memset(st, 0, sizeof(*st));
	root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	if (!root || !json_is_object(root)) {
		snprintf(err, errsz, "status is not a JSON object%s%s",
		         root ? "" : ": ", root ? "" : je.text);
		json_decref(root);
		return -1;
	}
	if (!json_object_get(root, VRT_CONTROL_K_PID) ||
	    !json_is_string(json_object_get(root, VRT_CONTROL_K_STATE))) {
		snprintf(err, errsz, "status without \"pid\" or \"state\"");
		json_decref(root);
		return -1;
	}
	st->pid = num(root, VRT_CONTROL_K_PID);
	st->ppid = num(root, VRT_CONTROL_K_PPID);
	str(root, VRT_CONTROL_K_STATE, st->state, sizeof(st->state));
	st->recording = !strcmp(st->state, VRT_CONTROL_STATE_RECORDING);
	str(root, VRT_CONTROL_K_TRACE, st->trace, sizeof(st->trace));
	st->events = num(root, VRT_CONTROL_K_EVENTS);
	st->dropped = num(root, VRT_CONTROL_K_DROPPED);
	st->inflight = num(root, VRT_CONTROL_K_INFLIGHT);
	st->ooms = num(root, VRT_CONTROL_K_OOMS);
	st->pinned_bytes = num(root, VRT_CONTROL_K_PINNED);
	devs = json_object_get(root, VRT_CONTROL_K_DEVICES);
	json_array_foreach(devs, i, d)
	{
		struct vrt_ctl_device *x;
		if (st->ndev == VRT_CTL_MAX_DEVICES || !json_is_object(d))
			continue;
		x = &st->dev[st->ndev++];
		v = json_object_get(d, VRT_CONTROL_K_ID);
		x->id = json_is_integer(v) ? json_integer_value(v) : -1;
		str(d, VRT_CONTROL_K_VENDOR, x->vendor, sizeof(x->vendor));
		x->live_bytes = num(d, VRT_CONTROL_K_LIVE);
		x->total_bytes = num(d, VRT_CONTROL_K_TOTAL);
		phases = json_object_get(d, VRT_CONTROL_K_PHASES);
		json_object_foreach(phases, name, v)
		{
			if (x->nphases == VRT_CTL_MAX_PHASES)
				break;
			snprintf(x->phases[x->nphases].name,
			         sizeof(x->phases[x->nphases].name), "%s",
			         name);
			x->phases[x->nphases].bytes =
			        json_is_integer(v) && json_integer_value(v) > 0
			                ? (uint64_t)json_integer_value(v)
			                : 0;
			x->nphases++;
		}
	}
	json_decref(root);
	return 0;
}
