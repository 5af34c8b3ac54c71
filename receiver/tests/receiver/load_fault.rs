//! The load and fault run (`receiver/examples/load_fault/run.rs` says what
//! it does and what must hold) at a tenth of its full scale: 200 machines
//! long-polling with a 5 s window, 10 sending events, 5 page users, one
//! receiver process SIGKILLed and started again, then PostgreSQL restarted;
//! about a minute. The full scale is the example `load_fault`
//! (bench/receiver.sh runs it). Skipped, saying so, without PostgreSQL.

#[path = "../../examples/load_fault/load.rs"]
mod load;
#[path = "../../examples/load_fault/run.rs"]
mod run;

#[test]
fn under_load_a_killed_process_and_a_database_restart_lose_and_double_nothing() {
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_sessionpipe-receiver"));
    let Some(report) = run::run(bin, run::Scale::small()) else {
        return;
    };
    assert!(
        report.violations.is_empty(),
        "{}\n{}",
        report.violations.join("\n"),
        report.lines.join("\n")
    );
}
