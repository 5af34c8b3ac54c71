//! The load and fault run's parts (`run.rs` puts them together and says
//! what must hold): a receiver process that can be SIGKILLed and started
//! again on its port, and the load's actors over HTTP: machines paired
//! through the test door and long-polling, machines sending events, page
//! users signed in with a software passkey reading the board, and commands
//! queued through the test door. Each counts what it saw in `Seen`; none
//! judges it.

use serde_json::{Value, json};
use sessionpipe_testkit::passkey::Phone;
use sessionpipe_verifier::softkey::{self, SoftPasskey};
use std::collections::HashMap;
use std::io::BufRead;
use std::net::{IpAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long past its window a long-poll may end (a SIGKILL, a database
/// restart and its pool's reconnection, two loaded cores).
pub const POLL_SLACK: Duration = Duration::from_secs(15);

/// The receivers' sink token (events, pairing, the test doors).
pub const TOKEN: &str = "load-fault-sink-token";

/// A receiver process on a fixed port, started again the same way.
pub struct Process {
    bin: PathBuf,
    args: Vec<String>,
    log: PathBuf,
    pub child: Option<Child>,
}

impl Process {
    pub fn start(bin: &Path, args: Vec<String>, log: PathBuf) -> Process {
        let mut p = Process {
            bin: bin.to_path_buf(),
            args,
            log,
            child: None,
        };
        p.spawn();
        p
    }

    pub fn spawn(&mut self) {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .expect("the log");
        let mut child = Command::new(&self.bin)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .spawn()
            .expect("the receiver starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut line)
            .expect("its first line");
        assert!(
            line.starts_with("http://"),
            "the receiver did not start: {line:?}\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
        self.child = Some(child);
    }

    pub fn sigkill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.sigkill();
    }
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn event(session: &str, machine: &str, seq: u64) -> Value {
    json!({
        "protocol": 1,
        "id": ulid::Ulid::generate().to_string(),
        "type": "tool.started",
        "time": protocol::time::rfc3339_ms(protocol::time::now_ms()),
        "tier": 1,
        "harness": {"name": "claude-code", "version": "2.1.0", "event": "PreToolUse"},
        "session": {"id": session, "seq": seq, "machine": machine, "cwd": "~/work/project"},
        "privacy": {"rulesets": ["secrets@1"], "pii": false},
        "data": {"tool": "Bash", "call_id": format!("toolu_{seq:020}")},
    })
}

/// What everyone shares while the load runs.
#[derive(Default)]
pub struct Seen {
    /// Message id → times a machine's poll handed it over.
    pub received: Mutex<HashMap<String, u32>>,
    /// Message ids whose final ack a machine had answered 2xx.
    pub acked: Mutex<HashMap<String, ()>>,
    pub polls: AtomicU64,
    pub poll_errors: AtomicU64,
    /// The longest poll, and how many went past their window + slack (ms).
    pub poll_longest_ms: AtomicU64,
    pub polls_stuck: AtomicU64,
    pub ack_retries: AtomicU64,
    pub board_reads: AtomicU64,
    pub board_retries: AtomicU64,
    pub sign_ins: AtomicU64,
    pub batch_retries: AtomicU64,
    pub duplicates_answered: AtomicU64,
}

/// A machine: its id and token.
#[derive(Clone)]
pub struct Machine {
    pub id: String,
    pub token: String,
}

/// Pairs one machine through `url` (the balancer), approving with the test
/// door; tried again from the start when a step fails.
pub async fn pair(c: &reqwest::Client, url: &str, passkey: &SoftPasskey, i: usize) -> Machine {
    loop {
        if let Some(m) = pair_once(c, url, passkey, i).await {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn pair_once(
    c: &reqwest::Client,
    url: &str,
    passkey: &SoftPasskey,
    i: usize,
) -> Option<Machine> {
    let started: Value = c
        .post(format!("{url}/v1/control/pair"))
        .bearer_auth(TOKEN)
        .json(
            &json!({"name": format!("load-{i}"), "harnesses": ["claude-code"],
                      "modes": ["turn"], "version": "0.1.0"}),
        )
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?
        .json()
        .await
        .ok()?;
    let (machine, code) = (started["machine"].as_str()?, started["code"].as_str()?);
    let proof = softkey::enrollment_proof(passkey, machine, code);
    c.post(format!("{url}/test/pair/approve"))
        .bearer_auth(TOKEN)
        .json(&json!({"code": code, "key": passkey.trusted(), "proof": proof}))
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?;
    let paired: Value = c
        .get(format!("{url}/v1/control/pair?code={code}"))
        .bearer_auth(TOKEN)
        .send()
        .await
        .ok()?
        .error_for_status()
        .ok()?
        .json()
        .await
        .ok()?;
    Some(Machine {
        id: machine.to_string(),
        token: paired["token"].as_str()?.to_string(),
    })
}

/// A machine long-polling until `stop`: every message it is handed is
/// noted, then acked (until the ack is answered 2xx) before it polls again.
pub async fn long_poll(
    c: reqwest::Client,
    url: String,
    m: Machine,
    wait: Duration,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
) {
    let window = wait + POLL_SLACK;
    while !stop.load(Ordering::SeqCst) {
        let t = Instant::now();
        let r = c
            .get(format!(
                "{url}/v1/control?machine={}&wait={}",
                m.id,
                wait.as_secs()
            ))
            .bearer_auth(&m.token)
            .timeout(wait + Duration::from_secs(120))
            .send()
            .await;
        let answer = match r {
            Ok(r) if r.status() == 200 => r.json::<Value>().await.ok(),
            Ok(r) if r.status() == 204 => Some(json!({"messages": []})),
            _ => None,
        };
        let took = t.elapsed();
        seen.polls.fetch_add(1, Ordering::Relaxed);
        seen.poll_longest_ms
            .fetch_max(took.as_millis() as u64, Ordering::Relaxed);
        if took > window {
            seen.polls_stuck.fetch_add(1, Ordering::Relaxed);
        }
        let Some(doc) = answer else {
            seen.poll_errors.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(Duration::from_millis(300)).await;
            continue;
        };
        let mut acks = Vec::new();
        for msg in doc["messages"].as_array().into_iter().flatten() {
            let id = msg["id"].as_str().unwrap_or_default().to_string();
            *seen.received.lock().unwrap().entry(id.clone()).or_insert(0) += 1;
            acks.push(json!({"id": id, "outcome": "delivered", "mode": "turn",
                             "at": protocol::time::rfc3339_ms(protocol::time::now_ms())}));
        }
        if acks.is_empty() {
            continue;
        }
        let body = json!({"acks": acks});
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let r = c
                .post(format!("{url}/v1/control/ack"))
                .bearer_auth(&m.token)
                .json(&body)
                .send()
                .await;
            if r.is_ok_and(|r| r.status().is_success()) {
                let mut acked = seen.acked.lock().unwrap();
                for a in &acks {
                    acked.insert(a["id"].as_str().unwrap_or_default().to_string(), ());
                }
                break;
            }
            seen.ack_retries.fetch_add(1, Ordering::Relaxed);
            if Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

/// A machine sending batches of 10 events of one session until `stop`, each
/// batch sent again until it is answered 202; the seqs answered 202.
pub async fn send_events(
    c: reqwest::Client,
    url: String,
    machine: String,
    every: Duration,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
) -> (String, u64) {
    let session = format!("load-{machine}");
    let mut seq = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let events: Vec<Value> = (seq..seq + 10)
            .map(|s| event(&session, &machine, s))
            .collect();
        let body = serde_json::to_vec(&json!({"events": events})).unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let r = c
                .post(format!("{url}/v1/events"))
                .bearer_auth(TOKEN)
                .header("content-type", "application/json")
                .body(body.clone())
                .send()
                .await;
            if let Ok(r) = r
                && r.status() == 202
                && let Ok(doc) = r.json::<Value>().await
            {
                let dup = doc["duplicates"].as_u64().unwrap_or(0);
                seen.duplicates_answered.fetch_add(dup, Ordering::Relaxed);
                break;
            }
            seen.batch_retries.fetch_add(1, Ordering::Relaxed);
            if Instant::now() > deadline {
                // Never answered 202: not counted as sent (a stored copy
                // then shows as more stored than sent).
                return (session, seq);
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        seq += 10;
        tokio::time::sleep(every).await;
    }
    (session, seq)
}

/// A page user at `from`: makes an account with its phone's passkey, signs
/// in with it, then reads the board until `stop` (signing in again when
/// refused 401). Runs on a thread of its own (the phone is synchronous).
pub fn page_user(
    url: String,
    origin: String,
    from: IpAddr,
    n: usize,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
) -> Result<(), String> {
    let c = reqwest::blocking::Client::builder()
        .local_address(from)
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let mut phone = Phone::at(&origin);
    let mut cookie: Option<String> = None;
    let call = |cookie: &mut Option<String>,
                method: &str,
                path: &str,
                body: Option<Value>|
     -> Result<(u16, Value), String> {
        let mut req = c
            .request(method.parse().unwrap(), format!("{url}{path}"))
            .header("x-sessionpipe-page", "1")
            .header("content-type", "application/json");
        if let Some(k) = cookie.as_ref() {
            req = req.header("cookie", k.clone());
        }
        if let Some(b) = body {
            req = req.body(b.to_string());
        }
        let r = req.send().map_err(|e| e.to_string())?;
        if let Some(set) = r.headers().get("set-cookie").and_then(|v| v.to_str().ok()) {
            *cookie = set.split(';').next().map(str::to_string);
        }
        let status = r.status().as_u16();
        let text = r.text().map_err(|e| e.to_string())?;
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    };
    let (s, started) = call(
        &mut cookie,
        "POST",
        "/app/api/register/start",
        Some(json!({"name": format!("user {n}")})),
    )?;
    if s != 200 {
        return Err(format!("register start: {s} {started}"));
    }
    let credential = phone.create(&started["publicKey"]);
    let (s, made) = call(
        &mut cookie,
        "POST",
        "/app/api/register/finish",
        Some(json!({"ceremony": started["ceremony"], "device": "phone", "credential": credential})),
    )?;
    if s != 201 {
        return Err(format!("register finish: {s} {made}"));
    }
    let mut sign_in = |cookie: &mut Option<String>| -> Result<(), String> {
        *cookie = None;
        let (s, started) = call(cookie, "POST", "/app/api/signin/start", None)?;
        if s != 200 {
            return Err(format!("sign-in start: {s} {started}"));
        }
        let credential = phone.get(&started["publicKey"]);
        let (s, signed) = call(
            cookie,
            "POST",
            "/app/api/signin/finish",
            Some(json!({"ceremony": started["ceremony"], "credential": credential})),
        )?;
        if s != 200 || cookie.is_none() {
            return Err(format!("sign-in finish: {s} {signed}"));
        }
        seen.sign_ins.fetch_add(1, Ordering::Relaxed);
        Ok(())
    };
    sign_in(&mut cookie)?;
    while !stop.load(Ordering::SeqCst) {
        match call(&mut cookie, "GET", "/app/api/board", None) {
            Ok((200, _)) => {
                seen.board_reads.fetch_add(1, Ordering::Relaxed);
            }
            Ok((401, _)) => {
                // Signed out: a session is kept in the database, so this is
                // a fault's; sign in again (a failure is tried again later).
                seen.board_retries.fetch_add(1, Ordering::Relaxed);
                let _ = sign_in(&mut cookie);
            }
            _ => {
                seen.board_retries.fetch_add(1, Ordering::Relaxed);
            }
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    Ok(())
}

/// Every `every` until `stop`, a command for a random machine through the
/// test door; (ids answered 201 → machine, queueings not answered).
pub async fn queue_commands(
    c: reqwest::Client,
    url: String,
    machines: Arc<Vec<Machine>>,
    every: Duration,
    stop: Arc<AtomicBool>,
) -> (HashMap<String, String>, u64) {
    let (mut known, mut unanswered) = (HashMap::new(), 0u64);
    let mut k = 0u64;
    while !stop.load(Ordering::SeqCst) {
        k += 1;
        let m = &machines[(k as usize * 7919) % machines.len()];
        let r = c
            .post(format!("{url}/test/control/enqueue"))
            .bearer_auth(TOKEN)
            .json(&json!({"machine": m.id, "cmd": format!("{{\"load\":{k}}}")}))
            .send()
            .await;
        match r {
            Ok(r) if r.status() == 201 => match r.json::<Value>().await {
                Ok(doc) => {
                    known.insert(
                        doc["id"].as_str().unwrap_or_default().to_string(),
                        m.id.clone(),
                    );
                }
                Err(_) => unanswered += 1,
            },
            // Refused before it was kept (a 4xx/5xx says it was not):
            // nothing queued.
            Ok(r) if r.status().is_client_error() || r.status().is_server_error() => {}
            _ => unanswered += 1,
        }
        tokio::time::sleep(every).await;
    }
    (known, unanswered)
}

pub fn rss_mb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap_or(0)
        / 1024
}
