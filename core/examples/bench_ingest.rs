//! Benchmark: ingest throughput, spool to outbox, in hooks per second. N job files
//! (Claude Code PreToolUse payloads of 20 sessions, as the hook writes them) are
//! put in a fresh spool, then one `Ingest::drain` takes them all: map, session
//! rules, secrets@1, append, commit (synchronous=FULL), unlink. Run by
//! `bench/run.sh`.

use sessionpipe_core::pipeline::ingest::Ingest;
use sessionpipe_core::pipeline::outbox::Outbox;
use sessionpipe_core::spool::Job;
use sessionpipe_core::spool::Spool;
use sessionpipe_core::spool::StatePaths;
use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let dir = tempfile::tempdir().unwrap();
    let paths = StatePaths::new(dir.path().join("state"));
    paths.ensure().unwrap();
    let t0 = Instant::now();
    for i in 0..n {
        let session = format!("00000000-0000-4000-8000-{:012}", i % 20);
        let payload = format!(
            "{{\"session_id\":\"{session}\",\"transcript_path\":\"/t.jsonl\",\"cwd\":\"/home/ann/src\",\"prompt_id\":\"p\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_use_id\":\"toolu_{i}\",\"tool_input\":{{\"command\":\"cargo test --workspace -- --nocapture {i}\",\"description\":\"Run the tests\"}}}}\n"
        );
        let job = Job {
            name: String::new(),
            harness: "claude-code".into(),
            event: "PreToolUse".into(),
            argv: vec!["claude-code".into(), "PreToolUse".into()],
            at_ns: 1_790_000_000_000_000_000 + i as u64,
            payload: payload.into_bytes(),
            ..Default::default()
        };
        std::fs::write(
            paths.spool().join(format!("{:020}-{i:010}.job", job.at_ns)),
            job.encode(),
        )
        .unwrap();
    }
    let spooled = t0.elapsed();
    let outbox = Outbox::open(&paths.outbox()).unwrap();
    let mut ingest = Ingest::new(
        outbox,
        Spool::new(paths.spool(), paths.quarantine()),
        "bench",
    );
    let t = Instant::now();
    let report = ingest.drain().unwrap();
    let took = t.elapsed();
    assert_eq!(report.jobs, n);
    println!("spooled {n} jobs in {spooled:?} (not counted)");
    println!("| jobs | events | time | hooks/s |");
    println!("|---:|---:|---:|---:|");
    println!(
        "| {n} | {} | {:.2} s | {:.0} |",
        report.events,
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64()
    );
}
