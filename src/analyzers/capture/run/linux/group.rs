//! The program's process group and session: killing them (ordered against reaping the leader)
//! and making sure nothing of them is left running.

use super::*;

/// Kills the program's group; shared by the tracer and the I/O thread. The lock orders a
/// kill against the reaping of the leader: while the leader is unreaped its pid keeps the
/// group and session ids from being reused, so `kill(-pgid)` cannot reach a stranger.
pub(crate) struct Killer {
    leader: libc::pid_t,
    state: Mutex<KillState>,
}

pub(super) struct KillState {
    pub(super) reaped: bool,
    reason: Option<EndedBy>,
}

impl Killer {
    pub(super) fn new(leader: libc::pid_t) -> Killer {
        Killer {
            leader,
            state: Mutex::new(KillState {
                reaped: false,
                reason: None,
            }),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, KillState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Kills every process of the group and session, remembering the first reason given.
    pub(super) fn kill(&self, reason: EndedBy) {
        let mut state = self.lock();
        if state.reaped {
            return;
        }
        state.reason.get_or_insert(reason);
        kill_group_and_session(self.leader);
    }

    pub(super) fn reason(&self) -> Option<EndedBy> {
        self.lock().reason
    }
}

/// SIGKILLs the process group `leader` and every other process of the session `leader`
/// (a process can leave the group with `setpgid` but not the session without `setsid`).
pub(super) fn kill_group_and_session(leader: libc::pid_t) {
    // SAFETY: kill has no memory effects; an empty group gives ESRCH, which is fine.
    unsafe {
        libc::kill(-leader, libc::SIGKILL);
    }
    for pid in live_members(leader) {
        // SAFETY: as above.
        unsafe {
            libc::kill(pid as libc::pid_t, libc::SIGKILL);
        }
    }
}

/// Processes, other than zombies, whose process group or session is `leader`.
pub(crate) fn live_members(leader: libc::pid_t) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut members = Vec::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|name| name.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(ids) = parse_stat(&stat)
            && !matches!(ids.state, 'Z' | 'X' | 'x')
            && (ids.group == leader || ids.session == leader)
        {
            members.push(pid);
        }
    }
    members.sort_unstable();
    members
}

/// The fields of `/proc/<pid>/stat` that cleanup needs.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct StatIds {
    pub(crate) state: char,
    pub(crate) group: libc::pid_t,
    pub(crate) session: libc::pid_t,
}

/// Parses `pid (comm) state ppid pgrp session ...`; `comm` may hold spaces and parentheses,
/// so fields are counted from the last `)`.
pub(crate) fn parse_stat(stat: &str) -> Option<StatIds> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _parent = fields.next()?;
    let group = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(StatIds {
        state,
        group,
        session,
    })
}

/// Kills and re-scans until no live member of the group or session is left, for at most
/// `CLEANUP_LIMIT`. Returns the members still alive then.
pub(super) fn clean_up(leader: libc::pid_t) -> Vec<u32> {
    let deadline = Instant::now() + CLEANUP_LIMIT;
    loop {
        let members = live_members(leader);
        if members.is_empty() || Instant::now() >= deadline {
            return members;
        }
        kill_group_and_session(leader);
        // Killed processes need a moment to exit; re-scanning at once would only spin.
        std::thread::sleep(Duration::from_millis(1));
    }
}
