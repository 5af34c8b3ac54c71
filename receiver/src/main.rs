//! `sessionpipe-receiver`: runs the self-hostable receiver until SIGINT or
//! SIGTERM: the events side, the control side with `--control`, and the page
//! with `--page`.
//!
//! The first line on stdout is the base URL (tests read it to learn the port);
//! the log goes to stderr through `tracing` (its level from `SESSIONPIPE_LOG`,
//! else `RUST_LOG`, else `info`; `--quiet` drops the line per request). Exit
//! codes: 0 after a signal, 1 when it cannot start, 2 for usage (clap's, and a
//! non-loopback `--listen` without `--allow-remote` or `--domain`).

use clap::Parser;
use sessionpipe_receiver::{
    Acme, Cidr, ControlOptions, LETS_ENCRYPT, Options, PageOptions, ProxyHeader, Receiver, TlsFiles,
};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use tracing_subscriber::EnvFilter;

/// jemalloc on Linux: a third less resident memory with 10 000 long-polls
/// held than glibc's malloc (receiver/Cargo.toml says why).
#[cfg(target_os = "linux")]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// What `--help` says first.
#[cfg(not(feature = "test-doors"))]
const ABOUT: &str = "The self-hostable sessionpipe receiver: your machines send it their agents' \
                     sessions, and your phone reaches them through it (--control, --page).";
#[cfg(feature = "test-doors")]
const ABOUT: &str = "The self-hostable sessionpipe receiver: your machines send it their agents' \
                     sessions, and your phone reaches them through it (--control, --page). \
                     This build serves the test doors (/test/...): it is for tests only.";

#[derive(Parser)]
#[command(
    name = "sessionpipe-receiver",
    version,
    about = ABOUT
)]
struct Cli {
    /// Address to listen on; port 0 picks a free one. Default: 127.0.0.1:0,
    /// or [::]:443 with --domain.
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// The bearer token senders must present (or SESSIONPIPE_RECEIVER_TOKEN, which
    /// keeps it out of the process list).
    #[arg(long, env = "SESSIONPIPE_RECEIVER_TOKEN", hide_env_values = true)]
    token: String,
    /// Highest tier accepted (0-3).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u8).range(0..=3))]
    max_tier: u8,
    /// Most events per batch (1-50).
    #[arg(long, default_value_t = 50)]
    max_events: usize,
    /// Most bytes per batch body (1024-262144).
    #[arg(long, default_value_t = 262_144)]
    max_bytes: usize,
    /// Folder of the SQLite database, kept across restarts (default: a temporary one).
    #[arg(long, value_name = "DIR")]
    data: Option<PathBuf>,
    /// A PostgreSQL database instead of the SQLite file (postgres://user@host/db);
    /// several receivers may share one. Read from the environment too, to keep a
    /// password out of the process list.
    #[arg(
        long,
        value_name = "URL",
        env = "SESSIONPIPE_RECEIVER_DATABASE",
        hide_env_values = true
    )]
    database: Option<String>,
    /// Delete events that arrived more than this many days ago (0: keep them all).
    #[arg(long, value_name = "DAYS", default_value_t = 0)]
    retention_days: u32,
    /// A whsec_ secret: batches must then carry a valid Standard Webhooks signature.
    #[arg(long, value_name = "SECRET")]
    webhook_secret: Option<String>,
    /// Allow a --listen address that is not loopback.
    #[arg(long)]
    allow_remote: bool,
    /// No line per request in the log.
    #[arg(long)]
    quiet: bool,
    /// Serve the control side too (pairing, the machine calls).
    #[arg(long)]
    control: bool,
    /// Serve the page (passkey sign-in, the board, commands signed on your
    /// device, push); implies --control.
    #[arg(long)]
    page: bool,
    /// Where people open the page (https://NAME, or http://localhost:PORT);
    /// implies --page. Default: http://localhost:<the port listened on>.
    #[arg(long, value_name = "URL")]
    origin: Option<String>,
    /// Anyone who reaches the page may make an account (by default only the
    /// first one; later ones need an invite from a signed-in account).
    #[arg(long)]
    open_registration: bool,
    /// Let push endpoints and notification URLs be at private addresses
    /// (loopback, the LAN: a self-hosted ntfy), plain http to them too. By
    /// default the receiver sends only over https to public addresses.
    #[arg(long)]
    allow_private_notify: bool,
    /// Serve HTTPS with this certificate chain (PEM); with --tls-key.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "domains"
    )]
    tls_cert: Option<PathBuf>,
    /// The certificate's private key (PEM); with --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Serve the page's files from this folder instead of the built-in copy.
    #[arg(long, value_name = "DIR")]
    page_dir: Option<PathBuf>,
    /// The WebAuthn rp id passkeys are made for: the page's host name, or a
    /// domain it is under (default: the first --domain, else localhost).
    #[arg(long)]
    rp_id: Option<String>,
    /// The longest control long-poll held, in seconds (1-60; default 25).
    #[arg(long)]
    wait_max_s: Option<u64>,
    /// Let a machine start pairing without the sink token (with a poll_key).
    #[arg(long)]
    open_pairing: bool,
    /// An MCP server (mcp__<name>) to declare in control.session_tools; repeatable.
    #[arg(long = "session-tool", value_name = "MCP_SERVER")]
    session_tools: Vec<String>,
    /// Async worker threads (1-1024; default: one per core). The database
    /// runs on threads of its own besides.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    workers: Option<u16>,
    /// A reverse proxy in front of this receiver (an address, or a network
    /// such as 10.0.0.0/8); repeatable. From these peers the client's address
    /// is read from the proxy header (--proxy-header); from any other, the
    /// peer is the client, whatever it sends.
    #[arg(
        long = "trusted-proxy",
        value_name = "ADDR|CIDR",
        help_heading = "Clients and their limits"
    )]
    trusted_proxies: Vec<Cidr>,
    /// The header the trusted proxies write the client's address into:
    /// x-forwarded-for (Caddy, nginx; the default) or forwarded (RFC 7239).
    #[arg(
        long,
        value_name = "NAME",
        requires = "trusted_proxies",
        help_heading = "Clients and their limits"
    )]
    proxy_header: Option<ProxyHeader>,
    /// Sign-ins and registrations one client (an address, an IPv6 /64) may
    /// have under way at once (default 16; each lasts at most 5 minutes).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000), help_heading = "Clients and their limits")]
    ceremonies_per_client: Option<u32>,
    /// Open pairings one client may have pending at once (default 8).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100_000), help_heading = "Clients and their limits")]
    pairings_per_client: Option<u32>,
    /// Pairings pending at once over all clients (default 512).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000), help_heading = "Clients and their limits")]
    max_pairings: Option<u32>,
    /// Connections open at once (each paired machine holds one for its
    /// long-poll; the process needs a file limit above it). Default 4096.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000), help_heading = "Clients and their limits")]
    max_connections: Option<u32>,
    /// Connections one client may have open at once (a trusted proxy's are
    /// many clients', not counted so). Default 256.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000), help_heading = "Clients and their limits")]
    connections_per_client: Option<u32>,
    /// Get and renew a certificate for NAME over ACME and serve HTTPS with
    /// it, no proxy needed; repeatable (one certificate for every NAME).
    /// Each NAME must resolve to this machine, and the ACME server must
    /// reach the port listened on: the TLS-ALPN-01 challenge is answered
    /// there. It listens on [::]:443 (IPv4 too) unless --listen says
    /// otherwise, which is public: --domain implies --allow-remote. The
    /// origin and the rp id are https://NAME and NAME (the first) unless
    /// given. Needs --data: the ACME account key and the certificate are
    /// kept in DIR/acme.
    #[arg(
        long = "domain",
        value_name = "NAME",
        requires = "data",
        help_heading = "HTTPS without a proxy"
    )]
    domains: Vec<String>,
    /// The ACME directory to get the certificate from.
    #[arg(long, value_name = "URL", requires = "domains", default_value = LETS_ENCRYPT, help_heading = "HTTPS without a proxy")]
    acme_directory: String,
    /// Trust this CA certificate (PEM) for the ACME directory's own HTTPS
    /// (a private ACME server's), instead of the built-in roots.
    #[arg(
        long,
        value_name = "FILE",
        requires = "domains",
        help_heading = "HTTPS without a proxy"
    )]
    acme_ca: Option<PathBuf>,
    /// A contact address for the ACME account (the CA writes about expiry
    /// and policy there); repeatable.
    #[arg(
        long = "acme-email",
        value_name = "EMAIL",
        requires = "domains",
        help_heading = "HTTPS without a proxy"
    )]
    acme_emails: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_log();
    let acme = (!cli.domains.is_empty()).then(|| Acme {
        directory: cli.acme_directory.clone(),
        ca: cli.acme_ca.clone(),
        emails: cli.acme_emails.clone(),
        ..Acme::new(cli.domains.clone())
    });
    let listen = cli.listen.unwrap_or_else(|| match acme {
        Some(_) => SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 443)),
        None => SocketAddr::from(([127, 0, 0, 1], 0)),
    });
    // A certificate for a public name is for a public listener.
    let allow_remote = cli.allow_remote || acme.is_some();
    if !listen.ip().is_loopback() && !allow_remote {
        eprintln!(
            "sessionpipe-receiver: {listen} is not a loopback address \
             (add --allow-remote to listen there)"
        );
        return ExitCode::from(2);
    }
    let page = cli.page || cli.origin.is_some();
    let on_postgres = cli.database.is_some();
    let control_only = cli.open_pairing
        || !cli.session_tools.is_empty()
        || cli.rp_id.is_some()
        || cli.wait_max_s.is_some()
        || cli.pairings_per_client.is_some()
        || cli.max_pairings.is_some();
    if control_only && !(cli.control || page) {
        eprintln!(
            "sessionpipe-receiver: --open-pairing, --session-tool, --rp-id, --wait-max-s, \
             --pairings-per-client and --max-pairings need --control (or --page)"
        );
        return ExitCode::from(2);
    }
    let page_only = cli.open_registration
        || cli.page_dir.is_some()
        || cli.ceremonies_per_client.is_some()
        || cli.allow_private_notify;
    if page_only && !page {
        eprintln!(
            "sessionpipe-receiver: --open-registration, --page-dir, \
             --ceremonies-per-client and --allow-private-notify need --page"
        );
        return ExitCode::from(2);
    }
    let rp_id = cli.rp_id.or_else(|| cli.domains.first().cloned());
    let defaults = Options::new("-");
    let max_connections = cli
        .max_connections
        .map_or(defaults.max_connections, |n| n as usize);
    let opts = Options {
        listen,
        token: cli.token,
        max_tier: cli.max_tier,
        max_events: cli.max_events,
        max_bytes: cli.max_bytes,
        data: cli.data,
        database: cli.database,
        retention: (cli.retention_days > 0)
            .then(|| std::time::Duration::from_secs(u64::from(cli.retention_days) * 86_400)),
        webhook_secret: cli.webhook_secret,
        allow_remote,
        log: !cli.quiet,
        control: (cli.control || page).then(|| {
            let defaults = ControlOptions::new(rp_id.unwrap_or_else(|| "localhost".into()));
            ControlOptions {
                wait_max_s: cli.wait_max_s.unwrap_or(25),
                open_pairing: cli.open_pairing,
                session_tools: cli.session_tools,
                pairings_per_client: cli
                    .pairings_per_client
                    .map_or(defaults.pairings_per_client, |n| n as usize),
                max_pairings: cli
                    .max_pairings
                    .map_or(defaults.max_pairings, |n| n as usize),
                ..defaults
            }
        }),
        tls: cli
            .tls_cert
            .zip(cli.tls_key)
            .map(|(cert, key)| TlsFiles { cert, key }),
        page: page.then(|| {
            // Empty: http://localhost:<the port bound>.
            let defaults = PageOptions::new(cli.origin.unwrap_or_default());
            PageOptions {
                open_registration: cli.open_registration,
                page_dir: cli.page_dir,
                ceremonies_per_client: cli
                    .ceremonies_per_client
                    .map_or(defaults.ceremonies_per_client, |n| n as usize),
                allow_private_notify: cli.allow_private_notify,
                ..defaults
            }
        }),
        acme,
        max_connections,
        connections_per_client: cli
            .connections_per_client
            .map_or(defaults.connections_per_client.min(max_connections), |n| {
                n as usize
            }),
        workers: cli.workers.map(usize::from),
        trusted_proxies: cli.trusted_proxies,
        proxy_header: cli.proxy_header.unwrap_or_default(),
    };
    let handle = match Receiver::start(opts) {
        Ok(h) => h,
        Err(e) => {
            tracing::error!("cannot start: {e}");
            return ExitCode::from(1);
        }
    };
    let data = if on_postgres {
        "PostgreSQL".to_string()
    } else {
        handle.data_dir().join("receiver.db").display().to_string()
    };
    tracing::info!("listening on {}, data in {data}", handle.url());
    // A page that cannot be shown was warned of at the start, and is not
    // advertised.
    if let Some(origin) = handle
        .page_origin()
        .filter(|_| handle.page_missing().is_none())
    {
        tracing::info!("the page is at {origin}");
    }
    // The URL last: a reader of the first line knows the log above is written.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", handle.url());
    let _ = out.flush();
    drop(out);
    if let Err(e) = wait_for_signal() {
        tracing::error!("cannot wait for signals: {e}");
    }
    handle.stop();
    ExitCode::SUCCESS
}

/// The log, on stderr: `SESSIONPIPE_LOG`, else `RUST_LOG` (the usual `info`,
/// `sessionpipe_receiver=debug` syntax), else `info`.
fn init_log() {
    let filter = ["SESSIONPIPE_LOG", "RUST_LOG"]
        .iter()
        .filter_map(|v| std::env::var(v).ok())
        .find(|v| !v.is_empty())
        .and_then(|v| EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_target(false)
        .try_init();
}

/// Blocks until SIGINT or SIGTERM (on Windows, Ctrl+C or Ctrl+Break).
fn wait_for_signal() -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    rt.block_on(async {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let mut term = signal(SignalKind::terminate())?;
            let mut int = signal(SignalKind::interrupt())?;
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        #[cfg(windows)]
        {
            let mut brk = tokio::signal::windows::ctrl_break()?;
            tokio::select! {
                r = tokio::signal::ctrl_c() => r?,
                _ = brk.recv() => {}
            }
        }
        Ok(())
    })
}
