//! Everything an agent process started, found before it is ended: real
//! agents run their shell tools in a session of their own (OpenCode 1.18,
//! Gemini CLI: `setsid`), which a signal to the agent's process group does
//! not reach, and which is reparented to init, out of reach of a walk by
//! parent, the moment the agent exits. So the tree is gathered while the
//! agent still runs, and signalled with its group.
//!
//! On Linux the walk reads `/proc` (each process's parent, group, session
//! and start time): the agent's descendants, and whatever shares a group or a
//! session one of them leads (a tool's own children whose shell has exited).
//! A process is signalled only while it is the one that was seen (same pid,
//! same start time), never this process or its group. Best-effort: what the
//! agent starts and orphans between the last walk and its exit, or before a
//! stop at all (an agent that exited by itself), is not found. On other
//! unix systems there is no walk, and the agent's group is all that is
//! ended. It signals what it found and nothing else: when to is the
//! caller's.

/// A process as `/proc/<pid>/stat` tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stat {
    pid: i32,
    ppid: i32,
    pgid: i32,
    sid: i32,
    /// Clock ticks after boot: with the pid, who the process is.
    start: u64,
    zombie: bool,
}

/// The agent process the walk starts from, as it was when it started.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Root {
    pid: i32,
    start: u64,
}

impl Root {
    /// The process `pid` now (None where there is no walk, or it is gone).
    pub(crate) fn of(pid: Option<u32>) -> Option<Root> {
        let pid = i32::try_from(pid?).ok()?;
        let s = stat(pid)?;
        Some(Root {
            pid,
            start: s.start,
        })
    }
}

/// The processes found under one agent, so far.
#[derive(Debug, Default)]
pub(crate) struct Tree {
    root: Option<Root>,
    seen: Vec<Stat>,
}

impl Tree {
    pub(crate) fn new(root: Option<Root>) -> Tree {
        Tree {
            root,
            seen: Vec::new(),
        }
    }

    /// Adds what runs under the root now; nothing once the root is gone
    /// (its pid may be someone else's by then). Only what runs now leads
    /// the walk on: a pid seen before may be another process's since.
    pub(crate) fn gather(&mut self) {
        let Some(root) = self.root else { return };
        let all = processes();
        let now = |s: &Stat| all.iter().any(|p| p.pid == s.pid && p.start == s.start);
        let Some(at) = all.iter().find(|p| p.pid == root.pid) else {
            return;
        };
        if at.start != root.start || at.zombie {
            return;
        }
        let me = std::process::id() as i32;
        let mut ours: Vec<Stat> = self.seen.iter().filter(|s| now(s)).copied().collect();
        loop {
            // Parents whose children are ours, and groups and sessions led
            // by one of ours (what is in them is ours too).
            let parents: Vec<i32> = ours.iter().map(|s| s.pid).chain([root.pid]).collect();
            let leaders: Vec<i32> = ours
                .iter()
                .filter(|s| s.pgid == s.pid || s.sid == s.pid)
                .map(|s| s.pid)
                .collect();
            let mut more = false;
            for p in &all {
                let under = parents.contains(&p.ppid)
                    || leaders.contains(&p.pgid)
                    || leaders.contains(&p.sid);
                if !under || p.pid == root.pid || p.pid == me || p.pid <= 1 {
                    continue;
                }
                if !ours.iter().any(|s| s.pid == p.pid && s.start == p.start) {
                    ours.push(*p);
                    more = true;
                }
            }
            if !more {
                break;
            }
        }
        for p in ours {
            if !self
                .seen
                .iter()
                .any(|s| s.pid == p.pid && s.start == p.start)
            {
                self.seen.push(p);
            }
        }
    }

    /// Whether anything found still runs (a zombie runs nothing).
    pub(crate) fn alive(&self) -> bool {
        self.seen.iter().any(|s| still(s).is_some())
    }

    /// Signals what was found and still runs (`kill`: SIGKILL, else
    /// SIGTERM), and the groups it leads, other than the agent's (the caller
    /// signals that one) and this process's own.
    pub(crate) fn signal(&self, kill: bool) {
        #[cfg(unix)]
        {
            use rustix::process::{Pid, Signal, getpgrp, kill_process, kill_process_group};
            let sig = if kill { Signal::KILL } else { Signal::TERM };
            let mine = getpgrp().as_raw_nonzero().get();
            let agents = self.root.map(|r| r.pid);
            for s in self.seen.iter().filter_map(still) {
                if s.pgid == s.pid
                    && s.pgid != mine
                    && Some(s.pgid) != agents
                    && let Some(group) = Pid::from_raw(s.pgid)
                {
                    let _ = kill_process_group(group, sig);
                }
                if let Some(pid) = Pid::from_raw(s.pid) {
                    let _ = kill_process(pid, sig);
                }
            }
        }
        #[cfg(not(unix))]
        let _ = kill;
    }
}

/// The process seen as `s`, if it is still that process and not a zombie.
fn still(s: &Stat) -> Option<Stat> {
    stat(s.pid).filter(|now| now.start == s.start && !now.zombie)
}

#[cfg(target_os = "linux")]
fn stat(pid: i32) -> Option<Stat> {
    parse(
        pid,
        &std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?,
    )
}

#[cfg(target_os = "linux")]
fn processes() -> Vec<Stat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(stat)
        .collect()
}

#[cfg(not(target_os = "linux"))]
fn stat(_pid: i32) -> Option<Stat> {
    None
}

#[cfg(not(target_os = "linux"))]
fn processes() -> Vec<Stat> {
    Vec::new()
}

/// `/proc/<pid>/stat`: the name is in parentheses and may hold anything, so
/// the fields are counted from the last `)`.
#[cfg_attr(not(target_os = "linux"), allow(dead_code))]
fn parse(pid: i32, text: &str) -> Option<Stat> {
    let rest: Vec<&str> = text.rsplit_once(')')?.1.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).copied();
    Some(Stat {
        pid,
        zombie: matches!(field(3)?, "Z" | "X" | "x"),
        ppid: field(4)?.parse().ok()?,
        pgid: field(5)?.parse().ok()?,
        sid: field(6)?.parse().ok()?,
        start: field(22)?.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_from_its_last_parenthesis() {
        let line =
            "4242 (a (tricky) name) S 17 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 98765 0 0";
        let s = parse(4242, line).unwrap();
        assert_eq!((s.ppid, s.pgid, s.sid, s.start), (17, 4242, 4242, 98765));
        assert!(!s.zombie);
        let dead = "7 (sleep) Z 1 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 5 0 0";
        assert!(parse(7, dead).unwrap().zombie);
        assert!(parse(7, "7 (sleep) S 1").is_none());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_child_is_found_and_ended_and_this_process_is_never_in_the_tree() {
        use std::os::unix::process::CommandExt;
        // `sh` in a group of its own stands in for the agent, its `sleep`
        // for the tool (the session of its own is the integration tests').
        let mut agent = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .process_group(0)
            .spawn()
            .unwrap();
        let root = Root::of(Some(agent.id()));
        let mut tree = Tree::new(root);
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while tree.seen.is_empty() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
            tree.gather();
        }
        let found: Vec<Stat> = tree.seen.clone();
        let me = std::process::id() as i32;
        assert!(
            !found
                .iter()
                .any(|s| s.pid == me || s.pid == agent.id() as i32)
        );
        assert!(
            found.iter().any(|s| s.ppid == agent.id() as i32),
            "the agent's child was found: {found:?}"
        );
        assert!(tree.alive());
        tree.signal(true);
        let _ = agent.kill();
        let _ = agent.wait();
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while tree.alive() && std::time::Instant::now() < until {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        assert!(!tree.alive(), "what the tree held is gone");
    }
}
