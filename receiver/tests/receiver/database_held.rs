//! A stalled database stops nothing but the writes: another connection holds
//! the SQLite file's write lock for seconds while a receiver with one async
//! worker keeps answering discovery and reads, ends the long-polls it holds on
//! time, and stores the batch that came meanwhile once the lock is let go.

use crate::common::{self, Paired, TOKEN, localhost, started};
use sessionpipe_receiver::Options;
use std::time::{Duration, Instant};

/// How long the write lock is held at most: under the receiver's busy
/// timeout (5 s), so the batch waiting for it is stored, not refused.
const HOLD_MAX: Duration = Duration::from_millis(4_500);

/// The long-polls' wait: they end while the lock is still held.
const POLL_WAIT_S: u64 = 2;

#[test]
fn a_held_write_lock_stalls_only_the_writes() {
    let dir = tempfile::tempdir().unwrap();
    let rx = common::start(Options {
        data: Some(dir.path().to_path_buf()),
        control: Some(localhost()),
        workers: Some(1),
        ..Options::new(TOKEN)
    });
    assert_eq!(rx.send(&[started("before", 0)]).status, 202);
    let machines: Vec<Paired> = (0..3).map(|_| rx.pair()).collect();

    std::thread::scope(|s| {
        let polls: Vec<_> = machines
            .iter()
            .map(|p| {
                let rx = &rx;
                s.spawn(move || {
                    let status = rx.poll(p, POLL_WAIT_S).status;
                    (status, Instant::now())
                })
            })
            .collect();
        // Every poll has had its first look (its heartbeat is written) and
        // waits: nothing is queued.
        let deadline = Instant::now() + Duration::from_secs(10);
        for p in &machines {
            while rx.view(&p.machine).body["last_poll_at"].is_null() {
                assert!(Instant::now() < deadline, "the poll never looked");
                std::thread::sleep(Duration::from_millis(20));
            }
        }

        let lock = rusqlite::Connection::open(dir.path().join("receiver.db")).unwrap();
        lock.execute_batch("BEGIN IMMEDIATE").unwrap();
        let held = Instant::now();
        let batch = s.spawn(|| {
            let r = rx.send(&[started("during", 0)]);
            (r.status, Instant::now())
        });
        let mut slowest = Duration::ZERO;
        let mut asked = 0;
        while held.elapsed() < HOLD_MAX && !polls.iter().all(|p| p.is_finished()) {
            let t = Instant::now();
            let doc = rx.get("/.well-known/sessionpipe", None);
            assert_eq!(doc.status, 200);
            assert_eq!(rx.seqs("before"), Ok(vec![0]), "reads go on");
            slowest = slowest.max(t.elapsed());
            asked += 1;
            std::thread::sleep(Duration::from_millis(100));
        }
        // Past the polls' end, the writer is still waiting for the lock.
        std::thread::sleep(Duration::from_millis(200));
        assert!(!batch.is_finished(), "the batch waits for the lock");
        lock.execute_batch("COMMIT").unwrap();
        let released = Instant::now();

        assert!(asked > 0);
        assert!(
            slowest < Duration::from_secs(1),
            "discovery and a read took {slowest:?} while the database was held"
        );
        for p in polls {
            let (status, at) = p.join().unwrap();
            assert_eq!(status, 204, "nothing was queued");
            assert!(
                at < released,
                "a held poll ended on time, {:?} before the lock was let go",
                released - at
            );
        }
        let (status, at) = batch.join().unwrap();
        assert_eq!(status, 202);
        assert!(at >= released, "stored once the lock was let go");
    });
    assert_eq!(rx.seqs("during"), Ok(vec![0]));
}
