//! The hub's rules, on calls and messages made by hand: answers reach the
//! hook that waits, once; prompts wait for their session's own Stop; a job
//! that reports nothing is answered at once.

use super::*;

fn call(job: &str, opened: &[&str], cleared: &[&str]) -> HookCall {
    HookCall {
        job: job.into(),
        harness: "claude-code".into(),
        session: "s1".into(),
        event: "PermissionRequest".into(),
        opened: opened.iter().map(|s| s.to_string()).collect(),
        cleared: cleared.iter().map(|s| s.to_string()).collect(),
        turn_ended: false,
        transcript: None,
        subagent: None,
    }
}

fn s1() -> SessionRef {
    sessionpipe_verifier::parse_session("claude-code:s1").unwrap()
}

fn from(id: &str) -> MessageRef {
    MessageRef {
        receiver: "https://r".into(),
        id: id.into(),
        expires_ms: i64::MAX,
    }
}

#[tokio::test]
async fn an_answer_reaches_the_hook_that_waits_and_only_once() {
    let (hub, mut finals) = Hub::new();
    hub.seen(vec![call("j1", &["perm-1"], &[])]);
    let hub = std::sync::Arc::new(hub);
    let h = hub.clone();
    let hook =
        tokio::spawn(async move { h.hook("j1", Ask::Permission, Duration::from_secs(5)).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    let deny = Decision {
        allow: false,
        note: Some("no".into()),
    };
    assert_eq!(
        hub.offer_answer(from("m1"), &s1(), "perm-1", deny.clone()),
        AnswerOffer::Delivered
    );
    assert_eq!(
        hook.await.unwrap(),
        ForHook::Permission(deny.clone(), Some(from("m1")))
    );
    assert!(finals.try_recv().is_err(), "acked only once it is written");
    hub.handed(&from("m1"), "turn", true);
    assert_eq!(finals.recv().await.unwrap().ack["outcome"], "delivered");
    // The next hook closes the attention; a second answer is expired.
    hub.seen(vec![call("j2", &[], &["perm-1"])]);
    assert_eq!(
        hub.offer_answer(from("m2"), &s1(), "perm-1", deny),
        AnswerOffer::Expired
    );
}

#[tokio::test]
async fn the_terminal_answering_first_releases_the_hook_silently() {
    let (hub, _finals) = Hub::new();
    let hub = std::sync::Arc::new(hub);
    let h = hub.clone();
    let hook =
        tokio::spawn(async move { h.hook("j1", Ask::Permission, Duration::from_secs(5)).await });
    // The hook asked before ingest took its job.
    tokio::time::sleep(Duration::from_millis(20)).await;
    hub.seen(vec![call("j1", &["perm-1"], &[])]);
    tokio::time::sleep(Duration::from_millis(20)).await;
    hub.seen(vec![call("j2", &[], &["perm-1"])]);
    assert_eq!(hook.await.unwrap(), ForHook::Nothing);
}

#[tokio::test]
async fn an_answer_before_its_hook_is_held_then_taken() {
    let (hub, mut finals) = Hub::new();
    let allow = Decision {
        allow: true,
        note: None,
    };
    assert_eq!(
        hub.offer_answer(from("m1"), &s1(), "perm-1", allow.clone()),
        AnswerOffer::Held
    );
    hub.seen(vec![call("j1", &["perm-1"], &[])]);
    assert_eq!(
        hub.hook("j1", Ask::Permission, Duration::from_secs(1))
            .await,
        ForHook::Permission(allow, Some(from("m1")))
    );
    // The hook was gone before it printed: `failed`, never `delivered`.
    hub.handed(&from("m1"), "turn", false);
    let f = finals.recv().await.unwrap();
    assert_eq!(
        (f.id.as_str(), f.ack["outcome"].as_str()),
        ("m1", Some("failed"))
    );
}

#[tokio::test]
async fn a_prompt_waits_for_the_running_turns_stop_or_has_no_rung() {
    let (hub, mut finals) = Hub::new();
    let s = &s1();
    assert_eq!(
        hub.offer_prompt(from("m0"), s, "x".into(), false, true),
        PromptOffer::NoRung
    );
    assert_eq!(
        hub.offer_prompt(from("m1"), s, "framed".into(), true, true),
        PromptOffer::Queued
    );
    let mut stop = call("j9", &[], &[]);
    stop.event = "Stop".into();
    hub.seen(vec![stop]);
    assert_eq!(
        hub.hook("j9", Ask::Turn, Duration::from_secs(1)).await,
        ForHook::Turn("framed".into(), from("m1"))
    );
    hub.handed(&from("m1"), "turn", true);
    // Not final yet: the reply of the turn it starts is followed.
    assert!(finals.try_recv().is_err());
    let mut follows = hub.take_follows();
    assert_eq!(follows.len(), 1);
    assert_eq!((&follows[0].session, follows[0].mode), (s, "turn"));
    // Taken once: a second Stop gets nothing, and its turn's end is told.
    let mut again = call("j10", &[], &[]);
    again.event = "Stop".into();
    again.turn_ended = true;
    hub.seen(vec![again]);
    assert_eq!(&follows[0].turn_ends.try_recv().unwrap().session, s);
    assert_eq!(
        hub.hook("j10", Ask::Turn, Duration::from_secs(1)).await,
        ForHook::Nothing
    );
}

#[tokio::test]
async fn a_subagents_stop_takes_nothing_of_its_sessions() {
    let (hub, _finals) = Hub::new();
    let s = &sessionpipe_verifier::parse_session("droid:s1").unwrap();
    assert_eq!(
        hub.offer_prompt(from("m1"), s, "framed".into(), true, true),
        PromptOffer::Queued
    );
    let mut sub = call("j1", &[], &[]);
    (sub.harness, sub.event) = ("droid".into(), "Stop".into());
    sub.subagent = Some("sub-1".into());
    let mut own = call("j2", &[], &[]);
    (own.harness, own.event) = ("droid".into(), "Stop".into());
    hub.seen(vec![sub, own]);
    assert_eq!(
        hub.hook("j1", Ask::Turn, Duration::from_secs(1)).await,
        ForHook::Nothing
    );
    assert_eq!(
        hub.hook("j2", Ask::Turn, Duration::from_secs(1)).await,
        ForHook::Turn("framed".into(), from("m1")),
        "the session's own Stop takes it"
    );
}

/// A Stop ingest took but reports nothing of (a Codex subagent's, an
/// ephemeral thread's, one it could not read) gets nothing, whether it
/// asked before or after, and while a hook about a job never taken still
/// waits; a prompt queued for the session stays for its own Stop.
#[tokio::test]
async fn a_job_that_reports_nothing_is_answered_nothing_at_once() {
    let (hub, _finals) = Hub::new();
    let hub = std::sync::Arc::new(hub);
    let s = &sessionpipe_verifier::parse_session("codex:s1").unwrap();
    assert_eq!(
        hub.offer_prompt(from("m1"), s, "framed".into(), true, true),
        PromptOffer::Queued
    );
    let ask = |job: &'static str| {
        let h = hub.clone();
        tokio::spawn(async move { h.hook(job, Ask::Turn, Duration::from_secs(5)).await })
    };
    let never = ask("j0");
    let early = ask("j1");
    tokio::time::sleep(Duration::from_millis(20)).await;
    hub.passed(vec!["j1".into(), "j2".into()]);
    assert_eq!(early.await.unwrap(), ForHook::Nothing);
    assert_eq!(ask("j2").await.unwrap(), ForHook::Nothing);
    assert!(!never.is_finished(), "answered before the patience ran out");
    let mut own = call("j3", &[], &[]);
    (own.harness, own.event) = ("codex".into(), "Stop".into());
    hub.seen(vec![own]);
    assert_eq!(
        hub.hook("j3", Ask::Turn, Duration::from_secs(1)).await,
        ForHook::Turn("framed".into(), from("m1"))
    );
    never.abort();
}

#[tokio::test]
async fn a_waiter_takes_a_prompt_at_once() {
    let (hub, _finals) = Hub::new();
    let hub = std::sync::Arc::new(hub);
    let h = hub.clone();
    let w = tokio::spawn(async move { h.wait(&s1()).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(hub.waiting(), vec![s1()]);
    assert_eq!(
        hub.offer_prompt(from("m1"), &s1(), "hi".into(), false, true),
        PromptOffer::ToWaiter
    );
    assert_eq!(w.await.unwrap(), Some(("hi".to_string(), from("m1"))));
}

#[tokio::test]
async fn the_person_at_the_machine_answers_a_waiting_prompt_once() {
    let (hub, _finals) = Hub::new();
    let hub = std::sync::Arc::new(hub);
    assert!(
        !hub.answer_locally(&s1(), "perm-1", true),
        "nothing waits yet"
    );
    hub.seen(vec![call("j1", &["perm-1"], &[])]);
    let h = hub.clone();
    let hook =
        tokio::spawn(async move { h.hook("j1", Ask::Permission, Duration::from_secs(5)).await });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        hub.waiting_permissions(),
        vec![(s1(), "perm-1".to_string())]
    );
    assert!(hub.answer_locally(&s1(), "perm-1", true));
    assert_eq!(
        hook.await.unwrap(),
        ForHook::Permission(
            Decision {
                allow: true,
                note: None
            },
            None
        )
    );
    assert!(hub.waiting_permissions().is_empty());
    assert!(!hub.answer_locally(&s1(), "perm-1", false), "answered once");
}

#[test]
fn queued_prompts_and_held_answers_expire() {
    let (hub, mut finals) = Hub::new();
    let mut f = from("m1");
    f.expires_ms = 1_000;
    hub.offer_prompt(f.clone(), &s1(), "x".into(), true, true);
    let mut g = from("m2");
    g.expires_ms = 1_000;
    hub.offer_answer(
        g,
        &s1(),
        "perm-9",
        Decision {
            allow: true,
            note: None,
        },
    );
    hub.expire(2_000);
    let a = finals.try_recv().unwrap();
    let b = finals.try_recv().unwrap();
    assert_eq!(a.ack["outcome"], "expired");
    assert_eq!(b.ack["outcome"], "expired");
}
