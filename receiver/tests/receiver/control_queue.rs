//! A machine's queue (HTTP.md §3, CONTROL §10): the long-poll, redelivery until
//! a final ack, duplicate acks, `taken`, `progress`, expiry, `off`, the bounds,
//! and the queue and tokens across a restart (hashed at rest).

use crate::common::*;
use crate::control_pairing::assert_absent;
use serde_json::json;
use sessionpipe_verifier::{MemoryNonces, Policy, Signed};
use std::time::{Duration, Instant};

const SESSION: &str = "claude-code:8c132906-8c3f-4814-870a-afc3d05e1d2e";

#[test]
fn a_long_poll_returns_as_soon_as_a_message_is_queued() {
    let rx = start_control(localhost());
    let p = rx.pair();
    let signed = p.prompt(SESSION, "Add the Oct 8 row");
    let begun = Instant::now();
    let (reply, id) = std::thread::scope(|s| {
        let poll = s.spawn(|| rx.poll(&p, 10));
        std::thread::sleep(Duration::from_millis(300));
        let id = rx.enqueue(&p.machine, &signed, 60);
        (poll.join().unwrap(), id)
    });
    let took = begun.elapsed();
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert!(took < Duration::from_secs(3), "{took:?}");
    let env = &reply.body["messages"][0];
    assert_eq!(env["id"], json!(id));
    // Carried byte for byte: the machine's verifier takes it as signed.
    let carried = Signed {
        cmd: env["cmd"].as_str().unwrap().to_string(),
        csig: env["csig"].as_str().map(str::to_string),
        grant: Some(serde_json::from_value(env["grant"].clone()).unwrap()),
        confirm: None,
    };
    assert_eq!(carried, signed);
    let trusted = p.trusted();
    let policy = Policy::new(&p.machine, "localhost", &trusted, now_ms());
    let ok = sessionpipe_verifier::verify(&carried, &policy, &mut MemoryNonces::new());
    assert!(ok.is_ok(), "{ok:?}");
    let at = protocol::time::parse_rfc3339_ms(env["at"].as_str().unwrap()).unwrap();
    let exp = protocol::time::parse_rfc3339_ms(env["expires_at"].as_str().unwrap()).unwrap();
    assert_eq!(exp - at, 60_000);
}

#[test]
fn a_poll_with_nothing_due_waits_at_most_wait_max_s() {
    let rx = start_control(ControlOptions {
        wait_max_s: 1,
        ..localhost()
    });
    let p = rx.pair();
    let begun = Instant::now();
    assert_eq!(rx.poll(&p, 30).status, 204);
    let took = begun.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!(
        rx.get(
            &format!("/v1/control?machine={}&wait=x", p.machine),
            Some(&p.token)
        )
        .status,
        400
    );
    assert!(
        rx.view(&p.machine).body["last_poll_at"].is_string(),
        "a heartbeat"
    );
}

#[test]
fn a_second_poll_for_the_machine_ends_the_first() {
    let rx = start_control(localhost());
    let p = rx.pair();
    let (first, first_took, second) = std::thread::scope(|s| {
        let first = s.spawn(|| {
            let t = Instant::now();
            (rx.poll(&p, 20), t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(400));
        let second = rx.poll(&p, 1);
        let (r, took) = first.join().unwrap();
        (r, took, second)
    });
    assert_eq!((first.status, second.status), (204, 204));
    assert!(first_took < Duration::from_secs(3), "{first_took:?}");
}

#[test]
fn a_message_is_redelivered_until_its_final_ack_and_a_duplicate_ack_is_tolerated() {
    let rx = start_control(localhost());
    let p = rx.pair();
    let id = rx.enqueue(&p.machine, &p.prompt(SESSION, "still there?"), 60);
    assert_eq!(rx.message(&p.machine, &id)["state"], "queued");
    assert_eq!(rx.poll_ids(&p, 1), Ok(vec![id.clone()]));
    assert_eq!(rx.poll_ids(&p, 1), Ok(vec![id.clone()]), "no ack: again");
    assert_eq!(rx.message(&p.machine, &id)["state"], "polled");
    let done = ack_of(&id, "delivered", json!({"mode": "resume", "reply": "yes"}));
    let r = rx.ack(&p, std::slice::from_ref(&done));
    assert_eq!(r.status, 202);
    assert_eq!(
        r.body,
        json!({"recorded": 1, "duplicates": 0, "unknown": []})
    );
    assert_eq!(rx.poll_ids(&p, 1), Err(204));
    let again = rx.ack(&p, &[done, ack_of(&id, "failed", json!({}))]);
    assert_eq!(again.status, 202);
    assert_eq!(again.body["duplicates"], 2, "the first final ack stands");
    let m = rx.message(&p.machine, &id);
    assert_eq!(m["state"], "final");
    assert_eq!(m["deliveries"], 2);
    assert_eq!(m["acks"]["final"]["outcome"], "delivered");
    assert_eq!(m["acks"]["final"]["mode"], "resume");
    assert_eq!(m["acks"]["final"]["reply"], "yes");
    assert_eq!(
        (
            m["acks"]["count"].as_u64(),
            m["acks"]["duplicates"].as_u64()
        ),
        (Some(3), Some(2))
    );

    let unknown = rx.ack(
        &p,
        &[ack_of("01K6ZT0000000000000000000A", "delivered", json!({}))],
    );
    assert_eq!(
        unknown.body["unknown"],
        json!(["01K6ZT0000000000000000000A"])
    );
    // A refusal with its code is final too.
    let id = rx.enqueue(&p.machine, &p.prompt(SESSION, "start it"), 60);
    assert_eq!(rx.poll_ids(&p, 1), Ok(vec![id.clone()]));
    let refused = ack_of(
        &id,
        "refused",
        json!({"code": "start_limit", "detail": "2 running"}),
    );
    assert_eq!(rx.ack(&p, &[refused]).status, 202);
    assert_eq!(rx.poll_ids(&p, 1), Err(204));
    assert_eq!(
        rx.message(&p.machine, &id)["acks"]["final"]["code"],
        "start_limit"
    );
}

#[test]
fn taken_pauses_redelivery_until_the_pause_ends() {
    let rx = start_control(ControlOptions {
        taken_pause: Duration::from_millis(1500),
        ..localhost()
    });
    let p = rx.pair();
    let id = rx.enqueue(&p.machine, &p.prompt(SESSION, "a long one"), 60);
    assert_eq!(rx.poll_ids(&p, 1), Ok(vec![id.clone()]));
    assert_eq!(
        rx.ack(&p, &[ack_of(&id, "taken", json!({"mode": "turn"}))])
            .status,
        202
    );
    assert_eq!(rx.poll_ids(&p, 0), Err(204), "paused");
    assert_eq!(rx.message(&p.machine, &id)["state"], "taken");
    // A poll held through the end of the pause is answered then.
    let begun = Instant::now();
    assert_eq!(rx.poll_ids(&p, 10), Ok(vec![id.clone()]));
    let took = begun.elapsed();
    assert!(
        took > Duration::from_millis(800) && took < Duration::from_secs(4),
        "{took:?}"
    );
    // A second taken does not pause it again; a final ack ends it.
    let r = rx.ack(&p, &[ack_of(&id, "taken", json!({}))]);
    assert_eq!(r.body["duplicates"], 1);
    assert_eq!(rx.poll_ids(&p, 0), Ok(vec![id.clone()]));
    rx.ack(
        &p,
        &[ack_of(
            &id,
            "delivered",
            json!({"mode": "turn", "reply": "done"}),
        )],
    );
    assert_eq!(rx.poll_ids(&p, 0), Err(204));
}

#[test]
fn progress_keeps_the_highest_seq_and_its_reply() {
    let rx = start_control(localhost());
    let p = rx.pair();
    let id = rx.enqueue(&p.machine, &p.prompt(SESSION, "stream it"), 60);
    rx.poll_ids(&p, 1).unwrap();
    for (seq, reply) in [(2, "Working on"), (1, "Work"), (2, "Working on (again)")] {
        let a = ack_of(&id, "progress", json!({"seq": seq, "reply": reply}));
        assert_eq!(rx.ack(&p, &[a]).status, 202);
    }
    let m = rx.message(&p.machine, &id);
    assert_eq!(
        m["acks"]["progress"],
        json!({"seq": 2, "reply": "Working on"})
    );
    assert_eq!(m["acks"]["duplicates"], 2, "a late and a repeated seq");
    assert_eq!(
        rx.poll_ids(&p, 0),
        Ok(vec![id.clone()]),
        "progress is not final"
    );
    let done = ack_of(
        &id,
        "delivered",
        json!({"mode": "resume", "reply": "Working on it. Done."}),
    );
    rx.ack(&p, &[done]);
    let m = rx.message(&p.machine, &id);
    assert_eq!(m["acks"]["final"]["reply"], "Working on it. Done.");
    assert_eq!(m["acks"]["progress"]["seq"], 2);
    let late = ack_of(&id, "progress", json!({"seq": 9, "reply": "late"}));
    rx.ack(&p, &[late]);
    assert_eq!(
        rx.message(&p.machine, &id)["acks"]["progress"]["seq"],
        2,
        "after the final: nothing"
    );
}

#[test]
fn an_expired_message_is_never_delivered() {
    let rx = start_control(localhost());
    let p = rx.pair();
    let id = rx.enqueue(&p.machine, &p.prompt(SESSION, "too late"), 1);
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(rx.poll_ids(&p, 1), Err(204));
    let m = rx.message(&p.machine, &id);
    assert_eq!(
        (m["state"].as_str(), m["deliveries"].as_u64()),
        (Some("expired"), Some(0))
    );
    let door = |body: serde_json::Value| rx.post_as("/test/control/enqueue", Some(TOKEN), &body);
    let signed = serde_json::to_value(p.prompt(SESSION, "x")).unwrap();
    let mut over = signed.clone();
    over["machine"] = json!(p.machine);
    over["expires_in_s"] = json!(24 * 3600 + 1);
    assert_eq!(door(over).status, 400, "at most 24 h");
}

#[test]
fn acks_are_checked_whole() {
    let rx = start_control(localhost());
    let p = rx.pair();
    let id = rx.enqueue(&p.machine, &p.prompt(SESSION, "x"), 60);
    rx.poll_ids(&p, 0).unwrap();
    let good = ack_of(&id, "delivered", json!({}));
    for bad in [
        ack_of(&id, "done", json!({})),
        ack_of(&id, "delivered", json!({"mode": "fax"})),
        ack_of(&id, "refused", json!({"code": "Start-Limit"})),
        ack_of(&id, "progress", json!({"seq": -1})),
        ack_of(&id, "delivered", json!({"at": "yesterday"})),
    ] {
        let r = rx.ack(&p, &[good.clone(), bad.clone()]);
        assert_eq!(r.status, 400, "{bad}");
    }
    assert_eq!(
        rx.post_as("/v1/control/ack", Some(&p.token), &json!({"acks": []}))
            .status,
        400
    );
    assert_eq!(
        rx.message(&p.machine, &id)["acks"]["count"],
        0,
        "nothing recorded"
    );
}

#[test]
fn off_removes_the_machine_its_token_and_its_queue() {
    let rx = start_control(localhost());
    let p = rx.pair();
    let kept = rx.pair();
    rx.enqueue(&p.machine, &p.prompt(SESSION, "x"), 60);
    let held = std::thread::scope(|s| {
        let poll = s.spawn(|| {
            let t = Instant::now();
            (rx.poll(&kept, 20).status, t.elapsed())
        });
        std::thread::sleep(Duration::from_millis(300));
        let off = rx.post_raw(
            "/v1/control/off",
            Vec::new(),
            &[("authorization", &format!("Bearer {}", kept.token))],
        );
        assert_eq!(off.status, 204);
        poll.join().unwrap()
    });
    assert_eq!(held.0, 401, "a poll held at off learns it is gone");
    assert!(held.1 < Duration::from_secs(3), "{:?}", held.1);
    assert_eq!(rx.poll(&kept, 0).status, 401);
    assert_eq!(
        rx.post_as("/v1/control/hello", Some(&kept.token), &hello_body())
            .status,
        401
    );
    assert_eq!(
        rx.ack(
            &kept,
            &[ack_of("01K6ZT0000000000000000000A", "delivered", json!({}))]
        )
        .status,
        401
    );
    assert_eq!(rx.view(&kept.machine).status, 404);
    let mut body = serde_json::to_value(p.prompt(SESSION, "y")).unwrap();
    body["machine"] = json!(kept.machine);
    assert_eq!(
        rx.post_as("/test/control/enqueue", Some(TOKEN), &body)
            .status,
        404
    );
    assert_eq!(rx.poll(&p, 0).status, 200, "another machine is untouched");
}

#[test]
fn queues_pairings_and_bodies_are_bounded() {
    let rx = start_control(ControlOptions {
        max_queue: 2,
        ..localhost()
    });
    let p = rx.pair();
    let a = rx.enqueue(&p.machine, &p.prompt(SESSION, "1"), 60);
    rx.enqueue(&p.machine, &p.prompt(SESSION, "2"), 60);
    let mut third = serde_json::to_value(p.prompt(SESSION, "3")).unwrap();
    third["machine"] = json!(p.machine);
    let full = rx.post_as("/test/control/enqueue", Some(TOKEN), &third);
    assert_eq!(full.status, 429, "{}", full.body);
    rx.ack(&p, &[ack_of(&a, "delivered", json!({}))]);
    assert_eq!(
        rx.post_as("/test/control/enqueue", Some(TOKEN), &third)
            .status,
        201,
        "room again"
    );

    let huge = vec![b' '; 5 * 1024 * 1024];
    let r = rx.post_raw(
        "/v1/control/hello",
        huge,
        &[("authorization", &format!("Bearer {}", p.token))],
    );
    assert_eq!(r.status, 413);
    let mut long = third.clone();
    long["cmd"] = json!("x".repeat(48_001));
    assert_eq!(
        rx.post_as("/test/control/enqueue", Some(TOKEN), &long)
            .status,
        400
    );
}

#[test]
fn a_restart_keeps_machines_and_queues_and_no_token_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let opts = Options {
        data: Some(dir.path().to_path_buf()),
        control: Some(localhost()),
        ..Options::new(TOKEN)
    };
    let rx = start(opts.clone());
    let p = rx.pair();
    let done = rx.enqueue(&p.machine, &p.prompt(SESSION, "acked"), 600);
    let waiting = rx.enqueue(&p.machine, &p.prompt(SESSION, "waiting"), 600);
    assert_eq!(rx.poll_ids(&p, 0), Ok(vec![done.clone(), waiting.clone()]));
    rx.ack(&p, &[ack_of(&done, "delivered", json!({"mode": "turn"}))]);
    rx.post_as("/v1/control/hello", Some(&p.token), &hello_body());
    let addr = rx.h.addr();
    rx.h.stop();
    assert_absent(dir.path(), &p.token);
    assert_absent(dir.path(), p.token.split_once('.').unwrap().1);

    let rx = start(Options {
        listen: addr,
        ..opts
    });
    assert_eq!(
        rx.poll_ids(&p, 0),
        Ok(vec![waiting.clone()]),
        "the token and queue survived"
    );
    assert_eq!(rx.message(&p.machine, &done)["state"], "final");
    assert_eq!(rx.view(&p.machine).body["hello"], hello_body());
}
