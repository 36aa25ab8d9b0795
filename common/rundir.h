/*
 * rundir.h — whether a run directory may be trusted, shared by the preload
 * (which writes traces and binds control sockets there) and the analyzer
 * (`record` before it starts the command, `ctl` and `live` before they
 * believe a socket found there).
 *
 * A run directory is trusted when it is a directory owned by the user
 * checking it and writable by nobody else. Anyone else who can write
 * there could rename a trace away, plant a socket at "<pid>.ctl" and
 * answer `vramtrace ctl` with forged numbers, or swap files under us; a
 * directory owned by another user is refused even when its mode looks
 * safe, since its owner can change the mode at any time.
 *
 * The check takes an open descriptor of the directory (opened with
 * O_DIRECTORY | O_NOFOLLOW), so what is checked is what is then used:
 * callers create files relative to that descriptor. Header only: both
 * sides include it and link nothing of the other. Thread-safe, no malloc,
 * callable from the preload's lifecycle (not from a hook's hot path: one
 * fstat).
 */
#ifndef VRT_RUNDIR_H
#define VRT_RUNDIR_H

#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* 0 when dfd is a directory owned by uid and not writable by its group or
 * others; otherwise -1 with the reason ("owned by uid 65534, not by this
 * user (uid 0)", "writable by others (mode 0777)") in why. */
static inline int vrt_rundir_check(int dfd, uid_t uid, char *why, size_t len)
{
	struct stat st;

	if (fstat(dfd, &st) < 0) {
		snprintf(why, len, "cannot stat it");
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, len, "not a directory");
		return -1;
	}
	if (st.st_uid != uid) {
		snprintf(why, len, "owned by uid %u, not by this user (uid %u)",
		         (unsigned)st.st_uid, (unsigned)uid);
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, len, "writable by %s (mode %04o)",
		         (st.st_mode & S_IWOTH) ? "others" : "its group",
		         (unsigned)(st.st_mode & 07777));
		return -1;
	}
	return 0;
}

#endif /* VRT_RUNDIR_H */
