//! The pool proxy's cost (issue 16, BENCHMARKS.md "The account pool"): a
//! streamed answer (an SSE stream of 20 events, like a short Messages
//! answer) fetched straight from a loopback upstream and through the proxy,
//! interleaved request by request in the same run; time to first byte and to
//! the last byte, p50 and p99. Then 100 streams at once, straight and through
//! the proxy (issue 35): the first time, when 99 of each 100 client
//! connections are new (rounds of them, each with a proxy of its own), and
//! cold, with nothing open before; then rounds of 100 from new clients (each
//! Claude Code process opens its own connections, while the proxy keeps the
//! upstream ones it opened before); then rounds with every connection kept.
//! Each with the time until all are done and the CPU the whole process spent
//! on it. The bursts twice: against a plain HTTP/1.1 upstream, and against
//! one shaped like the API (HTTPS, HTTP/2 offered), with clients shaped like
//! Claude Code (HTTP/1.1). Last, its RSS before and after 10 000 proxied
//! requests one at a time, and after 10 000 more 100 at once.
//!
//! It measures and prints; it asserts nothing about time.
//!
//! Usage: bench_proxy [SAMPLES] [ROUNDS] [RSS_REQUESTS]  (release build:
//! `cargo run --release -p sessionpipe-pool --example bench_proxy`).

use axum::body::Body;
use axum::http::Response;
use sessionpipe_pool::accounts::{Account, Pool};
use sessionpipe_pool::limits::Observed;
use sessionpipe_pool::oauth::{Secret, Tokens};
use sessionpipe_pool::proxy::{self, Observer, Proxy};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "../tests/loopback/https_edge.rs"]
mod https_edge;

const TOKEN: &str = "bench-listener-token";

struct Quiet;
impl Observer for Quiet {
    fn observed(&self, _: Option<&str>, _: &str, _: &Observed) {}
}

/// What every upstream answers: a short Messages stream, with the limits'
/// headers the proxy reads.
fn answers() -> axum::Router {
    axum::Router::new().fallback(|req: axum::extract::Request| async move {
        let _ = axum::body::to_bytes(req.into_body(), usize::MAX).await;
        let events: Vec<Result<Vec<u8>, std::io::Error>> = (0..20)
            .map(|i| Ok(format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"word {i} \"}}}}\n\n").into_bytes()))
            .collect();
        Response::builder()
            .header("content-type", "text/event-stream")
            .header("anthropic-ratelimit-unified-status", "allowed")
            .header("anthropic-ratelimit-unified-5h-utilization", "0.2")
            .body(Body::from_stream(futures_util::stream::iter(events)))
            .unwrap()
    })
}

/// A loopback upstream, and how clients reach it.
struct Upstream {
    base: String,
    /// The HTTPS one: its certificate, the connections it accepted.
    edge: Option<https_edge::Edge>,
}

impl Upstream {
    fn accepted(&self) -> usize {
        self.edge.as_ref().map_or(0, https_edge::Edge::accepted)
    }

    /// Plain HTTP/1.1, through the listener every sessionpipe server uses.
    async fn plain() -> Upstream {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        // Served with TCP_NODELAY, as every HTTP edge serves (hyper, nginx,
        // Envoy): an upstream with Nagle on holds a stream's small closing
        // write for the proxy's delayed ACK, +40 ms to every answer's end
        // that a real API does not cost (BENCHMARKS.md).
        tokio::spawn(sessionpipe_listener::serve(
            l,
            answers(),
            sessionpipe_listener::Limits::POOL,
            std::future::pending(),
        ));
        Upstream { base, edge: None }
    }

    /// The API's stand-in (`https_edge`).
    async fn https() -> Upstream {
        let edge = https_edge::serve(answers()).await;
        Upstream {
            base: edge.base.clone(),
            edge: Some(edge),
        }
    }

    /// A new client of it as Claude Code is one: HTTP/1.1, one connection
    /// for each request in flight (the real Claude Code, offered both in the
    /// handshake, picks HTTP/1.1: BENCHMARKS.md).
    fn as_claude_code(&self) -> reqwest::Client {
        match &self.edge {
            Some(edge) => reqwest::Client::builder()
                .add_root_certificate(edge.cert.clone())
                .http1_only()
                .build()
                .unwrap(),
            None => reqwest::Client::new(),
        }
    }

    /// The proxy's own client of it: `proxy::client()`'s settings, trusting
    /// this upstream's certificate.
    fn for_the_proxy(&self) -> reqwest::Client {
        match &self.edge {
            Some(edge) => proxy::client_builder()
                .add_root_certificate(edge.cert.clone())
                .build()
                .unwrap(),
            None => proxy::client(),
        }
    }
}

/// A proxy over `upstream` with one account, served until `stop` resolves
/// (then its client, and with it every connection it kept, is dropped).
async fn proxy_over(
    upstream: &Upstream,
    stop: impl Future<Output = ()> + Send + 'static,
) -> String {
    let pool = Arc::new(Pool::new());
    pool.put(
        Account {
            id: "acct".into(),
            email: None,
            enabled: true,
            imported_from: None,
        },
        Some(Tokens {
            access: Secret::new("at".into()),
            refresh: Secret::new("rt".into()),
            expires_at_ms: i64::MAX,
        }),
    );
    let p = Proxy::new(
        TOKEN.into(),
        upstream.base.clone(),
        upstream.for_the_proxy(),
        pool,
        Arc::new(Quiet),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(sessionpipe_listener::serve(
        l,
        p.router(),
        sessionpipe_listener::Limits::POOL,
        stop,
    ));
    base
}

fn body(i: usize) -> String {
    let uid = format!(
        r#"{{"device_id":"d","account_uuid":"","session_id":"session-{}"}}"#,
        i % 50
    );
    serde_json::json!({"model": "m", "stream": true, "max_tokens": 100,
        "messages": [{"role": "user", "content": "x".repeat(2000)}],
        "metadata": {"user_id": uid}})
    .to_string()
}

/// (time to first byte, time to the last byte).
async fn one(c: &reqwest::Client, base: &str, i: usize) -> (Duration, Duration) {
    let t0 = Instant::now();
    let mut r = c
        .post(format!("{base}/v1/messages"))
        .bearer_auth(TOKEN)
        .body(body(i))
        .send()
        .await
        .unwrap();
    let mut first = None;
    while let Some(chunk) = r.chunk().await.unwrap() {
        if first.is_none() && !chunk.is_empty() {
            first = Some(t0.elapsed());
        }
    }
    (first.unwrap(), t0.elapsed())
}

fn pct(v: &mut [Duration], p: f64) -> f64 {
    v.sort();
    let i = ((v.len() as f64 - 1.0) * p).round() as usize;
    v[i].as_secs_f64() * 1e3
}

fn rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0)
}

/// The CPU time this process's threads have had (ns), from each one's
/// schedstat: finer than the clock ticks `/proc/self/stat` counts in.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// 100 streams at once from `c` to `base`: (all done, each one's last byte,
/// CPU of the whole process meanwhile).
async fn burst(c: &reqwest::Client, base: &str) -> (Duration, Vec<Duration>, Duration) {
    // The CPU first: reading it costs more than the clock.
    let cpu0 = cpu_ns();
    let t0 = Instant::now();
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let (c, base) = (c.clone(), base.to_string());
            tokio::spawn(async move { one(&c, &base, i).await })
        })
        .collect();
    let mut lasts = Vec::with_capacity(tasks.len());
    for t in tasks {
        lasts.push(t.await.unwrap().1);
    }
    let all = t0.elapsed();
    (
        all,
        lasts,
        Duration::from_nanos(cpu_ns().saturating_sub(cpu0)),
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Bursts of one way: each one's time until all were done, the CPU it
/// took, every stream's last byte, and the connections the upstream
/// accepted meanwhile (HTTPS only).
#[derive(Default)]
struct Tally {
    all: Vec<Duration>,
    cpu: Vec<Duration>,
    each: Vec<Duration>,
    opened: usize,
}

impl Tally {
    /// One burst from `c` to `base`, counted against `up`'s connections.
    async fn burst(&mut self, up: &Upstream, c: &reqwest::Client, base: &str) {
        let opened = up.accepted();
        let (all, each, cpu) = burst(c, base).await;
        self.opened += up.accepted() - opened;
        self.all.push(all);
        self.cpu.push(cpu);
        self.each.extend(each);
    }
}

/// Prints the medians of `straight` and `through` and their ratio.
fn report(up: &Upstream, what: &str, mut straight: Tally, mut through: Tally) {
    let rounds = straight.all.len();
    let (d, p) = (pct(&mut straight.all, 0.5), pct(&mut through.all, 0.5));
    // A mean: schedstat lags a running thread by up to a clock tick, which
    // one round's reading may catch and the sum of many evens out.
    let mean = |v: &[Duration]| ms(v.iter().sum::<Duration>()) / v.len().max(1) as f64;
    let (dc, pc) = (mean(&straight.cpu), mean(&through.cpu));
    let opened = match up.edge {
        Some(_) => format!(
            "; connections the upstream accepted per round, mean, {:.1} / {:.1}",
            straight.opened as f64 / rounds.max(1) as f64,
            through.opened as f64 / rounds.max(1) as f64
        ),
        None => String::new(),
    };
    println!(
        "  100 at once, {what}, {rounds} rounds: all done p50 straight {d:.1} ms, through the pool {p:.1} ms (x{:.2}); each stream p99 {:.1} / {:.1} ms; CPU per round, mean, {dc:.1} / {pc:.1} ms (x{:.2}){opened}",
        p / d,
        pct(&mut straight.each, 0.99),
        pct(&mut through.each, 0.99),
        pc / dc
    );
}

/// `rounds` bursts each way, interleaved, from the clients `clients` gives
/// (straight, to the proxy).
async fn rounds(
    up: &Upstream,
    px: &str,
    what: &str,
    rounds: usize,
    clients: impl Fn() -> (reqwest::Client, reqwest::Client),
) {
    let (mut straight, mut through) = (Tally::default(), Tally::default());
    for _ in 0..rounds {
        let (to_up, to_px) = clients();
        straight.burst(up, &to_up, &up.base).await;
        through.burst(up, &to_px, px).await;
    }
    report(up, what, straight, through);
}

/// 100 at once the first time, as issue 16 measured it: a new client with
/// one connection open (to the upstream straight; to a new proxy, which has
/// one to the upstream, through it), so 99 of each 100 client connections
/// are new, and as many to the upstream as the proxy's client opens. Cold
/// (`warm` false): nothing open anywhere before the burst. `rounds` times,
/// each with its own new proxy, stopped after.
async fn first_times(up: &Upstream, rounds: usize, warm: bool) {
    let (mut straight, mut through) = (Tally::default(), Tally::default());
    for i in 0..rounds {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let px = proxy_over(up, async {
            let _ = stopped.await;
        })
        .await;
        let (to_up, to_px) = (up.as_claude_code(), reqwest::Client::new());
        if warm {
            one(&to_up, &up.base, i).await;
            one(&to_px, &px, i).await;
        }
        straight.burst(up, &to_up, &up.base).await;
        through.burst(up, &to_px, &px).await;
        let _ = stop.send(());
    }
    let what = if warm {
        "the first time (99 of each 100 client connections new)"
    } else {
        "cold (nothing open before: every connection new)"
    };
    report(up, what, straight, through);
}

/// The three kinds of burst against `up`, with `px` a proxy over it that
/// has served before.
async fn all_bursts(up: &Upstream, px: &str, n_rounds: usize) {
    first_times(up, n_rounds.min(10), true).await;
    first_times(up, n_rounds.min(10), false).await;
    rounds(
        up,
        px,
        "new clients (the proxy's upstream connections kept)",
        n_rounds,
        || (up.as_claude_code(), reqwest::Client::new()),
    )
    .await;
    // Kept: a burst each way first, unmeasured, opens the 100 connections.
    let kept = (up.as_claude_code(), reqwest::Client::new());
    burst(&kept.0, &up.base).await;
    burst(&kept.1, px).await;
    rounds(up, px, "every connection kept", n_rounds, || kept.clone()).await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let arg = |n: usize, default: usize| {
        std::env::args()
            .nth(n)
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let (samples, n_rounds, rss_requests) = (arg(1, 1000), arg(2, 20), arg(3, 10_000));
    let up = Upstream::plain().await;
    let px = proxy_over(&up, std::future::pending()).await;
    let c = reqwest::Client::new();
    for i in 0..50 {
        one(&c, &up.base, i).await;
        one(&c, &px, i).await;
    }
    let (mut d_first, mut d_last, mut p_first, mut p_last) = (vec![], vec![], vec![], vec![]);
    for i in 0..samples {
        let (f, l) = one(&c, &up.base, i).await;
        d_first.push(f);
        d_last.push(l);
        let (f, l) = one(&c, &px, i).await;
        p_first.push(f);
        p_last.push(l);
    }
    println!(
        "pool proxy, {samples} streamed answers each way, interleaved (20 SSE events, 2 KB request)"
    );
    for (name, d, p) in [
        ("first byte", &mut d_first, &mut p_first),
        ("last byte", &mut d_last, &mut p_last),
    ] {
        if samples == 0 {
            break;
        }
        let (d50, d99, p50, p99) = (pct(d, 0.5), pct(d, 0.99), pct(p, 0.5), pct(p, 0.99));
        println!(
            "  {name}: direct p50 {d50:.3} ms p99 {d99:.3} ms; through the pool p50 {p50:.3} ms p99 {p99:.3} ms; added p50 {:.3} ms p99 {:.3} ms",
            p50 - d50,
            p99 - d99
        );
    }
    all_bursts(&up, &px, n_rounds).await;
    // Against an HTTPS upstream that offers HTTP/2, as the API does: Claude
    // Code straight speaks HTTP/1.1 over TLS; through the pool, HTTP/1.1 on
    // loopback and the proxy's client whatever the upstream offers.
    let tls = Upstream::https().await;
    let tls_px = proxy_over(&tls, std::future::pending()).await;
    let warm = (tls.as_claude_code(), reqwest::Client::new());
    for i in 0..50 {
        one(&warm.0, &tls.base, i).await;
        one(&warm.1, &tls_px, i).await;
    }
    println!(
        "  against an HTTPS upstream offering HTTP/2 and HTTP/1.1 (Claude Code picks HTTP/1.1; the proxy's client, HTTP/2):"
    );
    all_bursts(&tls, &tls_px, n_rounds).await;
    // Memory: RSS after a warm-up, then after `rss_requests` more one at a
    // time, then as many again 100 at once.
    for i in 0..1000 {
        one(&c, &px, i).await;
    }
    let before = rss_kb();
    for i in 0..rss_requests {
        one(&c, &px, i).await;
    }
    let after = rss_kb();
    for _ in 0..rss_requests / 100 {
        burst(&c, &px).await;
    }
    let after_bursts = rss_kb();
    let mb = |kb: u64| kb as f64 / 1024.0;
    println!(
        "  RSS of the bench process (upstream, proxy and client): {:.1} MB after 1 000 warm-up requests, {:.1} MB after {rss_requests} more one at a time ({:+.1} MB), {:.1} MB after {rss_requests} more 100 at once ({:+.1} MB)",
        mb(before),
        mb(after),
        mb(after) - mb(before),
        mb(after_bursts),
        mb(after_bursts) - mb(after),
    );
}
