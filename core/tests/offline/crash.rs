//! Never lose, never duplicate: hooks fire from parallel processes while whatever
//! holds the daemon lock (the daemon, or a drain worker a hook started) is killed
//! with SIGKILL again and again. Afterwards every hook that returned is exactly
//! one event, and every session's seq runs 1..n without a gap; and a file sink,
//! written by every daemon that was killed, holds each event exactly once.

use serde_json::{Value, json};
use sessionpipe_testkit::{Sandbox, sandbox::bin};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const WRITERS: usize = 8;
const HOOKS_EACH: usize = 150;

fn session(w: usize) -> String {
    format!("00000000-0000-4000-8000-{w:012}")
}

fn lock_holder(sb: &Sandbox) -> Option<u32> {
    let text = std::fs::read_to_string(sb.state.join("daemon.lock")).ok()?;
    text.split_whitespace().next()?.parse().ok()
}

#[test]
fn sigkill_while_hooks_fire_loses_and_duplicates_nothing() {
    let sb = Arc::new(Sandbox::new());
    let file = sb.root().join("events.jsonl");
    crate::sinks_file::add_file_sink(&sb, &file, "3");
    let mut daemon = Some(sb.start_daemon());
    let stop = Arc::new(AtomicBool::new(false));
    let kills = Arc::new(AtomicUsize::new(0));

    let killer = {
        let (sb, stop, kills) = (sb.clone(), stop.clone(), kills.clone());
        std::thread::spawn(move || {
            let mut round = 0u64;
            let mut restarted = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(20 + (round * 37) % 90));
                if let Some(pid) = lock_holder(&sb) {
                    let ok = std::process::Command::new("kill")
                        .args(["-9", &pid.to_string()])
                        .status()
                        .is_ok_and(|s| s.success());
                    if ok {
                        kills.fetch_add(1, Ordering::Relaxed);
                    }
                }
                // Every other round a daemon comes back; in between, the hooks'
                // own drain workers carry the load.
                if round.is_multiple_of(2) {
                    restarted.push(
                        sb.command(bin("sessionpipe"))
                            .arg("daemon")
                            .stdout(std::process::Stdio::null())
                            .stderr(std::process::Stdio::null())
                            .spawn()
                            .unwrap(),
                    );
                }
                round += 1;
            }
            for mut c in restarted {
                let _ = c.kill();
                let _ = c.wait();
            }
        })
    };

    let started = Instant::now();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let sb = sb.clone();
            std::thread::spawn(move || {
                for i in 0..HOOKS_EACH {
                    let p = json!({
                        "session_id": session(w), "transcript_path": "/t.jsonl", "cwd": "/w",
                        "prompt_id": "p", "hook_event_name": "PreToolUse", "tool_name": "Bash",
                        "tool_use_id": format!("t-{w}-{i}"), "tool_input": {"command": "true"}
                    });
                    let out = sb.hook("claude-code", "PreToolUse", p.to_string().as_bytes());
                    assert!(out.status.success() && out.stdout.is_empty());
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let firing = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    killer.join().unwrap();
    if let Some(d) = daemon.take() {
        d.kill();
    }

    // A last daemon takes whatever is left.
    let _last = loop {
        if lock_holder(&sb)
            .is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
        {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        }
        break sb.start_daemon();
    };
    let total = WRITERS * HOOKS_EACH;
    let deadline = Instant::now() + Duration::from_secs(60);
    let events = loop {
        let evs = sb.events();
        let tools = evs.iter().filter(|e| e["type"] == "tool.started").count();
        if (tools >= total && sb.spooled() == 0) || Instant::now() > deadline {
            break evs;
        }
        std::thread::sleep(Duration::from_millis(100));
    };

    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut seqs: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for e in &events {
        seqs.entry(e["session"]["id"].as_str().unwrap().to_string())
            .or_default()
            .push(e["session"]["seq"].as_u64().unwrap());
        if e["type"] == "tool.started" {
            *seen
                .entry(e["data"]["call_id"].as_str().unwrap().to_string())
                .or_default() += 1;
        }
    }
    let missing: Vec<String> = (0..WRITERS)
        .flat_map(|w| (0..HOOKS_EACH).map(move |i| format!("t-{w}-{i}")))
        .filter(|id| !seen.contains_key(id))
        .collect();
    let doubled: Vec<(&String, &usize)> = seen.iter().filter(|(_, n)| **n > 1).collect();
    println!(
        "{total} hooks in {firing:?}, {} SIGKILLs; {} events, {} missing, {} duplicated",
        kills.load(Ordering::Relaxed),
        events.len(),
        missing.len(),
        doubled.len()
    );
    assert!(missing.is_empty(), "lost: {missing:?}");
    assert!(doubled.is_empty(), "duplicated: {doubled:?}");
    assert!(
        kills.load(Ordering::Relaxed) >= 10,
        "the test must actually kill"
    );
    for (s, list) in &seqs {
        let want: Vec<u64> = (1..=list.len() as u64).collect();
        assert_eq!(list, &want, "seq of {s}");
    }
    // Each session opens with the start the rules add (its hooks began mid-session).
    let firsts: Vec<&Value> = events.iter().filter(|e| e["session"]["seq"] == 1).collect();
    assert!(firsts.iter().all(|e| e["type"] == "session.started"));
    assert_eq!(firsts.len(), WRITERS);

    // The file sink: every event of the outbox, each once.
    let deadline = Instant::now() + Duration::from_secs(60);
    let written: Vec<Value> = loop {
        let lines: Vec<Value> = std::fs::read_to_string(&file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if lines.len() >= events.len() || Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut in_file: BTreeMap<String, usize> = BTreeMap::new();
    for e in &written {
        *in_file
            .entry(e["id"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    let twice: Vec<_> = in_file.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "written to the file twice: {twice:?}");
    let outbox: std::collections::BTreeSet<&str> =
        events.iter().map(|e| e["id"].as_str().unwrap()).collect();
    let file_ids: std::collections::BTreeSet<&str> = in_file.keys().map(String::as_str).collect();
    assert_eq!(file_ids, outbox, "the file holds the outbox's events");
}
