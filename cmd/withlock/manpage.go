package main

// The prose sections of withlock(1), as roff (genman.go adds the synopsis,
// the commands and every flag from the cli definitions). Plain ASCII; the
// tests render the page with groff -ww and man, and check that every
// command, flag and exit status is in it.

const manDescription = `.B withlock
takes a lock, runs
.I COMMAND
as a supervised child, and always cleans up: the lock is released, the
command's whole process tree is gone, and the command's exit status is
passed through \(em also when the lock machinery itself fails.
Its one promise: at most one holder, always cleaned up.
.PP
.B withlock run
takes the run lock of
.IR RUN_ID ,
a file in the lock directory (see
.BR FILES ).
When another live process holds it, withlock prints one line naming the
holder and exits 75 (or waits, with
.BR \-\-wait ).
While the command runs, withlock renews the lock every third of its TTL;
a lock whose holder died (same host, same boot, same pid namespace, and
nothing of its command's tree left) or whose TTL ran out is moved aside to
.I <lock>.stale.<unix\-time>
and taken over.
.B withlock scope
takes path scopes in a registry shared by every withlock of the user:
a write scope that overlaps another live holder's is refused, naming it.
.PP
Arguments are read as by
.BR flock (1)
and
.BR timeout (1):
withlock's flags come before
.I RUN_ID
or between
.I RUN_ID
and
.IR COMMAND ;
\fB\-\-\fR is optional, and the first word after
.I RUN_ID
that is not a withlock flag starts the command, whose arguments are never
read as withlock's
(\fBwithlock run job ls \-la\fR runs \fBls \-la\fR).
Every duration takes a bare number of seconds (\fB\-\-timeout 5\fR) or a
Go duration (\fB90s\fR, \fB5m\fR, \fB1h30m\fR);
\fBgc \-\-older\-than\fR also takes days (\fB7d\fR).
.PP
The command runs in its own process group, with the signal mask and the
ignored signals withlock was started with (so \fBnohup withlock ...\fR keeps
HUP ignored). TERM and INT start the teardown: they are forwarded to the
group, and after \fB\-\-grace\fR the group is killed. Other signals are
forwarded. withlock is a subreaper: daemons the command leaves behind are
ended (TERM, grace, KILL) when it exits. Logs go to standard error;
standard output belongs to the command. Success prints nothing.
`

const manExitStatus = `.SH "EXIT STATUS"
.TP
.I the command's own
The command exited by itself.
.TP
.BR 128 + \fIN\fR
The command died of signal
.IR N .
For SIGINT and SIGQUIT, withlock itself dies of the same signal after
cleaning up, so a calling shell stops its loop.
.TP
.B 75
(EX_TEMPFAIL) The lock is held by someone else: no \fB\-\-wait\fR, or the
wait ran out.
\fB\-\-conflict\-exit\-code\fR changes this status.
.TP
.B 73
(EX_CANTCREAT) The lock could not be taken because of an error (lock
directory unwritable or unsafe, scope registry corrupt, backend down), after
bounded retries. Also \fBstatus\fR when something could not be read.
.TP
.B 76
The lock was lost while the command ran, and the command was killed for it
(\fB\-\-on\-lock\-lost kill\fR, the default).
.TP
.B 124
\fB\-\-timeout\fR elapsed and the command was killed, as with
.BR timeout (1).
.TP
.B 126
The command was found but could not be executed.
.TP
.B 127
The command was not found.
.TP
.B 64
(EX_USAGE) Bad flags or arguments; also an unknown scope parent or a
duplicate live scope name.
.PP
When several apply, a kill that withlock started for a reason keeps that
reason's status (lost lock 76, \fB\-\-timeout\fR 124); otherwise the
command's own status is passed through. With \fB\-\-on\-lock\-lost warn\fR
the command runs on and its own status is passed through.
`

// manEnvironment lists the variables withlock reads that are not tied to
// one flag; flagEnvironment adds those that are (each ".B NAME" line here
// is left out there).
const manEnvironment = `.TP
.B WITHLOCK_DIR
The lock directory when \fB\-\-dir\fR is not given.
.TP
.B NEXUSCORE_RUN_LOCK_DIR
The lock directory when neither \fB\-\-dir\fR nor
.B WITHLOCK_DIR
is set (the variable of the run lock withlock replaces).
.TP
.B WITHLOCK_TTL
The lock's TTL when \fB\-\-ttl\fR is not given: a duration or a bare number
of seconds, 1 second to 1 year.
.TP
.B NEXUSCORE_RUN_LOCK_TTL_SECONDS
The TTL in whole seconds when neither \fB\-\-ttl\fR nor
.B WITHLOCK_TTL
is set. Without any of them the TTL is 30 seconds.
.TP
.B WITHLOCK_SCOPE_FILE
The scope registry when \fB\-\-scope\-file\fR is not given; else
.I scope.lock
in the default lock directory.
.TP
.B WITHLOCK_SCOPE_NAME
The default of \fBscope \-\-delegate\-from\fR: a scoped withlock sets it in its
command's environment, so a withlock nested inside takes its scope from the
outer one.
.TP
.B WITHLOCK_BACKEND
Where the run lock lives when \fB\-\-backend\fR is not given:
.B file
(the default) or
.BR etcd .
The etcd backend is the separate program
.B withlock\-etcd
(package withlock\-etcd), which withlock runs in its place when asked for
etcd.
.TP
.B WITHLOCK_ETCD_USERNAME\fR, \fBWITHLOCK_ETCD_PASSWORD
Credentials for etcd (only from the environment: a flag would show in
.BR ps (1)).
`

const manChildEnvironment = `.SS "Set in the command's environment"
.TP
.B WITHLOCK_RUN_ID
The run id whose lock is held.
.TP
.B WITHLOCK_LOCK_ID
The random id of this holding of the lock (the payload's \fBlock_id\fR).
.TP
.B WITHLOCK_LOCK_FILE
The path of the lock file (file backend).
.TP
.B WITHLOCK_LOCK_KEY
The etcd key of the lock (etcd backend).
.TP
.B WITHLOCK_FENCING_TOKEN
A number that grows with every acquisition of the run id, also across a
wiped lock directory: pass it to the storage the command writes, so a
holder that lost its lock cannot overwrite a newer holder's work.
.TP
.B WITHLOCK_SCOPE_NAME
The name of the scope allocation (\fBwithlock scope\fR).
.TP
.B WITHLOCK_SCOPE_FILE
The scope registry the allocation is in (\fBwithlock scope\fR).
`

const manFiles = `.SH FILES
.TP
.I /run/withlock
The default lock directory of root.
.TP
.I /tmp/withlock\-<uid>
The default lock directory of any other user.
The default is the same in every session of a user \(em cron, systemd, ssh,
a desktop terminal \(em so a job started from cron and one started by hand
exclude each other.
.B $XDG_RUNTIME_DIR
is not used. A private lock directory is created mode 0700 and refused (exit
73) if it is a symlink, writable by others, or owned by someone other than the
user or root. Root-owned sticky directories writable by all, such as
.I /run/lock
and
.I /tmp
(also through a root-owned symlink such as
.IR /var/lock ),
work too; there each lock file is checked to be the user's before it is
renewed, moved or removed.
.TP
.I <dir>/<sha256(RUN_ID)>.lock
The run lock of RUN_ID (the sha256 of the run id, in hex), mode 0600: a JSON
document with \fBrun_id\fR, \fBlock_id\fR, \fBpid\fR (withlock's own),
\fBcreated_at\fR, \fBexpires_at\fR, \fBhost\fR, \fBboot_id\fR,
\fBpid_ns\fR, \fBpid_start\fR, \fBcommand\fR and \fBfencing_token\fR.
.TP
.I <dir>/<sha256(RUN_ID)>.guard
Briefly locked with
.BR flock (2)
around every change of the lock file, so that two withlocks never both
reclaim one stale lock.
.TP
.I <dir>/<sha256(RUN_ID)>.fence
The last fencing token of RUN_ID. Neither \fBgc\fR nor \fBbreak\fR removes it.
.TP
.I <dir>/<sha256(RUN_ID)>.lock.stale.<unix\-time>
A stale lock moved aside (by a new holder or by \fBwithlock break\fR); removed
by \fBwithlock gc\fR.
.TP
.I <dir>/*.tmp.*
A temp file a writer that was killed left behind; removed by
\fBwithlock gc\fR.
.TP
.I <dir>/scope.lock
The scope registry (JSON, mode 0600), locked with
.BR flock (2)
for every change, and its last good copy
.IR scope.lock.bak .
`

const manExamples = `.SH EXAMPLES
A cron entry: at most one backup at a time, quiet when the previous one is
still running. Cron's PATH is /usr/bin:/bin, so give the full path:
.PP
.RS 4
.nf
*/5 * * * * /usr/bin/withlock run \-q \-\-conflict\-exit\-code 0 nightly\-backup \-\- /usr/local/bin/backup
.fi
.RE
.PP
The same job run by hand while cron's may be running: it waits up to ten
minutes, and
.B withlock status
in any session shows who holds it:
.PP
.RS 4
.nf
withlock run \-\-wait 10m nightly\-backup \-\- /usr/local/bin/backup
withlock status nightly\-backup
.fi
.RE
.PP
A systemd service; the unit's own timeout and withlock's grace nest
(systemd sends TERM to withlock, which tears the job down):
.PP
.RS 4
.nf
[Service]
Type=exec
ExecStart=/usr/bin/withlock run \-\-grace 20s \-\-timeout 2h report \-\- /usr/local/bin/report
TimeoutStopSec=30s
KillMode=mixed
.fi
.RE
.PP
A job runner resuming run r\-42: a second resume of the same run gets exit
75 and touches nothing; the command learns its fencing token:
.PP
.RS 4
.nf
withlock run r\-42 \-\-wait 30s \-\- resume\-run r\-42
sh \-c 'echo "token $WITHLOCK_FENCING_TOKEN"' # inside the command
.fi
.RE
.PP
Migrating from
.BR flock (1):
.PP
.RS 4
.nf
flock \-n /var/lock/x.lock cmd    withlock run x \-\- cmd
flock \-w 5 /var/lock/x.lock cmd  withlock run \-\-wait 5 x \-\- cmd
flock \-E 0 \-n ... cmd            withlock run \-\-conflict\-exit\-code 0 x \-\- cmd
.fi
.RE
.PP
A tool that writes into a tree, and a helper it hands part of it to:
.PP
.RS 4
.nf
withlock scope \-\-allow /project/src:write:recursive \-\- tool
withlock scope \-\-allow /project/src/gen:write:recursive \-\- gen  # inside tool
.fi
.RE
.PP
A holder that died and left a command running, and what remains afterwards:
.PP
.RS 4
.nf
withlock status
withlock break \-\-signal nightly\-backup
withlock gc \-\-older\-than 7d
.fi
.RE
`

const manSeeAlso = `.SH "SEE ALSO"
.BR flock (1),
.BR timeout (1),
.BR tini (1),
.BR flock (2),
.BR cron (8),
.BR systemd.exec (5)
`
