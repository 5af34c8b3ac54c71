//! The receiver's load and fault run at full scale (`run.rs` says what it
//! does and what must hold): two receiver processes on one PostgreSQL behind
//! the test kit's balancer, 2 000 machines long-polling, 50 of them sending
//! events, 20 page users reading the board, one process SIGKILLed and started
//! again, then PostgreSQL restarted. Prints what it saw; exits 1 when
//! something that must hold did not, 2 when PostgreSQL is not installed.
//! `receiver/tests/receiver/load_fault.rs` runs the same at a tenth of it.
//!
//! Usage: load_fault RECEIVER_BIN [MACHINES]   (a receiver built with
//! `--features test-doors`; bench/receiver.sh builds one)

mod load;
mod run;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let bin = args
        .get(1)
        .expect("usage: load_fault RECEIVER_BIN [MACHINES]");
    let mut scale = run::Scale::full();
    if let Some(n) = args.get(2).and_then(|s| s.parse().ok()) {
        scale.machines = n;
    }
    println!(
        "load and fault run: {} machines long-polling ({} s window), {} sending events, {} page users",
        scale.machines,
        scale.wait.as_secs(),
        scale.senders,
        scale.page_users
    );
    match run::run(std::path::Path::new(bin), scale) {
        None => std::process::ExitCode::from(2),
        Some(r) if r.violations.is_empty() => {
            println!("all held");
            std::process::ExitCode::SUCCESS
        }
        Some(r) => {
            println!("{} violation(s)", r.violations.len());
            std::process::ExitCode::from(1)
        }
    }
}
