//! Chaos: a hook storm from parallel processes while whatever holds the daemon
//! lock is SIGKILLed again and again and the receiver goes down and comes back.
//! At the end the receiver holds every (harness, session, seq) exactly once,
//! none missing, and the counts are printed.

use serde_json::json;
use sessionpipe_receiver::{Options, Receiver};
use sessionpipe_testkit::{Sandbox, sandbox::bin};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const WRITERS: usize = 6;
const HOOKS_EACH: usize = 250;
const TOKEN: &str = "chaos-token";

fn lock_holder(sb: &Sandbox) -> Option<u32> {
    std::fs::read_to_string(sb.state.join("daemon.lock"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[test]
fn kills_and_outages_lose_nothing_and_duplicate_nothing() {
    let sb = Arc::new(Sandbox::new());
    let data = sb.root().join("receiver");
    let mut opts = Options::new(TOKEN);
    opts.data = Some(data.clone());
    opts.max_tier = 3;
    let first = Receiver::start(opts.clone()).unwrap();
    let addr = first.addr();
    let url = first.url();
    let receiver = Arc::new(Mutex::new(Some(first)));

    let mut c = sb.command(bin("sessionpipe"));
    c.args(["sink", "add", &url, "--tier", "1", "--token-stdin"]);
    let out = sessionpipe_testkit::sandbox::run_with_stdin(c, format!("{TOKEN}\n").as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let stop = Arc::new(AtomicBool::new(false));
    let (kills, outages) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let killer = {
        let (sb, stop, kills) = (sb.clone(), stop.clone(), kills.clone());
        std::thread::spawn(move || {
            let mut children = Vec::new();
            let mut round = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(40 + (round * 53) % 120));
                if let Some(pid) = lock_holder(&sb)
                    && std::process::Command::new("kill")
                        .args(["-9", &pid.to_string()])
                        .status()
                        .is_ok_and(|s| s.success())
                {
                    kills.fetch_add(1, Ordering::Relaxed);
                }
                if round.is_multiple_of(2) {
                    let child = sb
                        .command(bin("sessionpipe"))
                        .arg("daemon")
                        .stdout(std::process::Stdio::null())
                        .stderr(std::process::Stdio::null())
                        .spawn()
                        .unwrap();
                    children.push(child);
                }
                round += 1;
            }
            for mut c in children {
                let _ = c.kill();
                let _ = c.wait();
            }
        })
    };
    let flapper = {
        let (receiver, stop, outages, opts) = (
            receiver.clone(),
            stop.clone(),
            outages.clone(),
            opts.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(700));
                if let Some(r) = receiver.lock().unwrap().take() {
                    r.stop();
                    outages.fetch_add(1, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(500));
                let mut o = opts.clone();
                o.listen = addr;
                *receiver.lock().unwrap() =
                    Some(Receiver::start(o).expect("the receiver comes back on its address"));
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
                        "session_id": format!("00000000-0000-4000-8000-{w:012}"), "transcript_path": "/t.jsonl",
                        "cwd": "/w", "prompt_id": "p", "hook_event_name": "PreToolUse", "tool_name": "Bash",
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
    let storm = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    killer.join().unwrap();
    flapper.join().unwrap();

    // Calm: one daemon, the receiver up, until everything arrived.
    while lock_holder(&sb).is_some_and(|pid| std::path::Path::new(&format!("/proc/{pid}")).exists())
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let _daemon = sb.start_daemon();
    let total_hooks = WRITERS * HOOKS_EACH;
    let want_events = total_hooks + WRITERS; // each session opens with its start
    let deadline = Instant::now() + Duration::from_secs(120);
    let keys = loop {
        let guard = receiver.lock().unwrap();
        let keys = guard.as_ref().unwrap().stored_keys();
        drop(guard);
        if keys.len() >= want_events || Instant::now() > deadline {
            break keys;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let stats = receiver.lock().unwrap().as_ref().unwrap().stats();

    let unique: BTreeSet<_> = keys.iter().cloned().collect();
    let mut per_session: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (_, s, seq) in &keys {
        per_session.entry(s.clone()).or_default().push(*seq);
    }
    println!(
        "{total_hooks} hooks from {WRITERS} writers in {storm:?}; {} SIGKILLs, {} receiver outages; \
         receiver holds {} events ({} unique), was sent {} duplicates",
        kills.load(Ordering::Relaxed),
        outages.load(Ordering::Relaxed),
        keys.len(),
        unique.len(),
        stats.duplicates
    );
    assert_eq!(unique.len(), keys.len(), "a key stored twice");
    assert_eq!(keys.len(), want_events, "events missing at the receiver");
    for (s, mut seqs) in per_session {
        seqs.sort();
        assert_eq!(
            seqs,
            (1..=(HOOKS_EACH as u64 + 1)).collect::<Vec<_>>(),
            "seq of {s}"
        );
    }
    assert!(kills.load(Ordering::Relaxed) >= 5 && outages.load(Ordering::Relaxed) >= 2);
}
