//! Being the person's paired device in a test (feature `control`): pairing a
//! sandbox's machine with the workspace receiver the way a person does
//! (`sessionpipe control pair`, then approving with a passkey through the
//! receiver's test door), and signing real commands for it with a software
//! passkey and its day key (`sessionpipe_verifier::softkey`: real WebAuthn
//! assertions, real ECDSA; nothing is skipped on the machine's side), and
//! putting a `start`'s files on the receiver as the device's upload would.

use crate::Sandbox;
use serde_json::{Value, json};
use sessionpipe_verifier::Signed;
use sessionpipe_verifier::softkey::{self, DayKey, SoftPasskey};
use std::io::BufRead;
use std::path::Path;
use std::time::{Duration, Instant};

/// A device paired with one machine through one receiver.
pub struct Device {
    pub receiver: String,
    pub sink_token: String,
    pub machine: String,
    pub passkey: SoftPasskey,
    day: DayKey,
    grant: sessionpipe_verifier::Grant,
}

/// Words of the frame every delivered `prompt` carries (ADAPTERS.md, Claude
/// Code's Transcript row): a model request holding them was framed.
pub const FRAMED: &str = "(sessionpipe control, signed on the sender";

/// The bearer token of the receiver `paired_machine` starts (its sink's).
pub const TOKEN: &str = "receiver-token-for-control";

/// A workspace receiver with control on, and the device paired through it.
pub struct PairedMachine {
    pub rx: sessionpipe_receiver::Handle,
    pub device: Device,
}

/// Starts a workspace receiver with control (rp id `localhost`, long-polls of
/// at most 5 s), adds it as the sandbox's sink and pairs the sandbox's machine
/// with it, allowing `folder`. The test starts its daemon after.
pub fn paired_machine(sb: &Sandbox, folder: &Path) -> PairedMachine {
    let mut o = sessionpipe_receiver::Options::new(TOKEN);
    let mut c = sessionpipe_receiver::ControlOptions::new("localhost");
    c.wait_max_s = 5;
    o.control = Some(c);
    let rx = sessionpipe_receiver::Receiver::start(o).expect("the receiver starts");
    let mut add = sb.command(crate::sandbox::bin("sessionpipe"));
    add.args(["sink", "add", &rx.url(), "--token-stdin"]);
    let out = crate::sandbox::run_with_stdin(add, format!("{TOKEN}\n").as_bytes());
    assert!(
        out.status.success(),
        "sink add: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let device = pair(sb, &rx.url(), TOKEN, folder);
    PairedMachine { rx, device }
}

/// A `start`'s `files` entry for `bytes`: `{name, type, size, sha256}`, the
/// hash base64url without padding, as the device signs it. The bytes still
/// have to reach the receiver (`Device::put_file`, or the receiver's
/// `Handle::put_file`).
pub fn file_entry(name: &str, media_type: &str, bytes: &[u8]) -> Value {
    json!({
        "name": name, "type": media_type, "size": bytes.len(),
        "sha256": sessionpipe_receiver::file_sha256(bytes),
    })
}

/// Now in epoch ms.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn client() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("a client builds")
}

/// Pairs the sandbox's machine with `receiver` (an http://127.0.0.1:PORT
/// receiver with control on rp id `localhost`, and a sink to it already added
/// with `sink_token`), allowing `folder`.
pub fn pair(sb: &Sandbox, receiver: &str, sink_token: &str, folder: &Path) -> Device {
    let folder = folder.to_string_lossy();
    pair_by(
        sb,
        &["control", "pair", receiver, "--folder", &folder],
        None,
        receiver,
        sink_token,
    )
}

/// Runs `sessionpipe ARGS` (a command that pairs: `control pair`, `connect`)
/// with `stdin` given to it, approves the pairing it prints through the
/// receiver's test door, and waits for it to end well.
pub fn pair_by(
    sb: &Sandbox,
    args: &[&str],
    stdin: Option<&str>,
    receiver: &str,
    sink_token: &str,
) -> Device {
    pair_by_saying(sb, args, stdin, receiver, sink_token).0
}

/// `pair_by`, and every line the command printed on stdout.
pub fn pair_by_saying(
    sb: &Sandbox,
    args: &[&str],
    stdin: Option<&str>,
    receiver: &str,
    sink_token: &str,
) -> (Device, Vec<String>) {
    let mut child = sb
        .command(crate::sandbox::bin("sessionpipe"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sessionpipe starts");
    {
        use std::io::Write;
        let mut input = child.stdin.take().expect("stdin");
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).expect("stdin takes it");
        }
    }
    let mut out = std::io::BufReader::new(child.stdout.take().expect("stdout")).lines();
    let (mut machine, mut url) = (None, None);
    let mut said = Vec::new();
    for line in out.by_ref() {
        let line = line.expect("a line");
        said.push(line.clone());
        if let Some(m) = line.strip_prefix("Pairing this machine as ") {
            machine = Some(m.trim_end_matches('.').to_string());
        }
        if let Some(rest) = line.strip_prefix("Open ") {
            url = rest.split_whitespace().next().map(str::to_string);
            break;
        }
    }
    let (Some(machine), Some(url)) = (machine, url) else {
        let err = child
            .wait_with_output()
            .map(|o| o.stderr)
            .unwrap_or_default();
        panic!(
            "pairing printed no link: {said:?} {}",
            String::from_utf8_lossy(&err)
        );
    };
    let code = url.rsplit('/').next().expect("a code").to_string();
    let port = reqwest::Url::parse(receiver)
        .ok()
        .and_then(|u| u.port())
        .expect("the receiver has a port");
    let passkey = SoftPasskey::es256("localhost", &format!("http://localhost:{port}"));
    let proof = softkey::enrollment_proof(&passkey, &machine, &code);
    let resp = client()
        .post(format!("{receiver}/test/pair/approve"))
        .bearer_auth(sink_token)
        .json(&json!({"code": code, "key": passkey.trusted(), "proof": proof, "account": "test-person"}))
        .send()
        .expect("the approval door answers");
    assert!(
        resp.status().is_success(),
        "approve: {}",
        resp.text().unwrap_or_default()
    );
    // What it says once paired, to its end.
    said.extend(out.map_while(Result::ok));
    let done = child.wait_with_output().expect("pairing ends");
    assert!(
        done.status.success(),
        "pairing failed: {} {said:?}",
        String::from_utf8_lossy(&done.stderr)
    );
    (
        Device::with_passkey(receiver, sink_token, &machine, passkey),
        said,
    )
}

impl Device {
    /// The same person's other device: another passkey (made for the same rp
    /// id), with its own day key and grant. Trusted only once enrolled.
    pub fn another(&self, passkey: SoftPasskey) -> Device {
        Device::with_passkey(&self.receiver, &self.sink_token, &self.machine, passkey)
    }

    /// A device of `passkey` for `machine`, with a fresh day key and a grant
    /// for the next 12 hours.
    fn with_passkey(
        receiver: &str,
        sink_token: &str,
        machine: &str,
        passkey: SoftPasskey,
    ) -> Device {
        let day = DayKey::generate();
        let now = now_ms();
        let grant = softkey::grant(
            &passkey,
            &day,
            now - 1_000,
            now + 12 * 3600 * 1000,
            "localhost",
        );
        Device {
            receiver: receiver.to_string(),
            sink_token: sink_token.to_string(),
            machine: machine.to_string(),
            passkey,
            day,
            grant,
        }
    }

    /// A command of `kind` for `session` with `fields`, signed under the day
    /// grant (its machine, nonce and iat filled in).
    pub fn sign(&self, kind: &str, session: &str, fields: Value) -> Signed {
        let mut cmd = json!({
            "v": 1, "t": "sessionpipe.control", "machine": self.machine,
            "kind": kind, "session": session,
        });
        for (k, v) in fields.as_object().cloned().unwrap_or_default() {
            cmd[k] = v;
        }
        cmd["nonce"] = json!(softkey::random_nonce());
        cmd["iat"] = json!(now_ms());
        softkey::sign_with_grant(&softkey::compact(&cmd), &self.day, &self.grant)
    }

    /// A `start` of a new session `session` in `cwd` with `text` and, when
    /// `files` is not empty, those entries (`file_entry`), signed under the
    /// day grant.
    pub fn sign_start(&self, session: &str, text: &str, cwd: &Path, files: &[Value]) -> Signed {
        let mut fields = json!({"text": text, "cwd": cwd.to_string_lossy()});
        if !files.is_empty() {
            fields["files"] = Value::Array(files.to_vec());
        }
        self.sign("start", session, fields)
    }

    /// Puts `bytes` on the receiver through its files door (served to the
    /// machine at `{control}/files/{sha256}` with `media_type`), as the
    /// device's upload would; the `files` entry to sign for them.
    pub fn put_file(&self, name: &str, media_type: &str, bytes: &[u8]) -> Value {
        let resp = client()
            .post(format!("{}/test/control/files", self.receiver))
            .bearer_auth(&self.sink_token)
            .header("content-type", media_type)
            .body(bytes.to_vec())
            .send()
            .expect("the files door answers");
        let status = resp.status();
        let v: Value = resp.json().unwrap_or(Value::Null);
        assert!(status.is_success(), "put file: {status} {v}");
        let entry = file_entry(name, media_type, bytes);
        assert_eq!(
            v["sha256"], entry["sha256"],
            "the receiver filed it elsewhere"
        );
        entry
    }

    /// Queues `signed` at the receiver; its message id.
    pub fn enqueue(&self, signed: &Signed, expires_in_s: u64) -> String {
        let mut body = serde_json::to_value(signed).expect("signed serialises");
        body["machine"] = json!(self.machine);
        body["expires_in_s"] = json!(expires_in_s);
        let resp = client()
            .post(format!("{}/test/control/enqueue", self.receiver))
            .bearer_auth(&self.sink_token)
            .json(&body)
            .send()
            .expect("the enqueue door answers");
        let status = resp.status();
        let v: Value = resp.json().unwrap_or(Value::Null);
        assert!(status.is_success(), "enqueue: {status} {v}");
        v["id"].as_str().expect("an id").to_string()
    }

    /// What the receiver knows of this machine (its hello, keys, messages).
    pub fn view(&self) -> Value {
        client()
            .get(format!(
                "{}/test/control/messages?machine={}",
                self.receiver, self.machine
            ))
            .bearer_auth(&self.sink_token)
            .send()
            .expect("the read door answers")
            .json()
            .expect("the read door says JSON")
    }

    /// Asserts the final ack of `id` (waited for up to `timeout`) is
    /// `delivered` in `mode` with `reply`; the ack.
    pub fn assert_delivered(&self, id: &str, timeout: Duration, mode: &str, reply: &str) -> Value {
        let ack = self.final_ack(id, timeout);
        assert_eq!(
            (
                ack["outcome"].as_str(),
                ack["mode"].as_str(),
                ack["reply"].as_str()
            ),
            (Some("delivered"), Some(mode), Some(reply)),
            "{ack}"
        );
        ack
    }

    /// The final ack the receiver got for message `id`, waited for.
    pub fn final_ack(&self, id: &str, timeout: Duration) -> Value {
        let until = Instant::now() + timeout;
        loop {
            let view = self.view();
            let m = view["messages"]
                .as_array()
                .and_then(|ms| ms.iter().find(|m| m["id"] == id).cloned());
            if let Some(f) = m.as_ref().map(|m| m["acks"]["final"].clone())
                && !f.is_null()
            {
                return f;
            }
            assert!(Instant::now() < until, "no final ack for {id}: {view}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the machine's last hello says `pred`.
    pub fn wait_hello(&self, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let until = Instant::now() + timeout;
        loop {
            let view = self.view();
            if pred(&view["hello"]) {
                return view["hello"].clone();
            }
            assert!(Instant::now() < until, "no such hello: {view}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
