//! The `sessionpipe` command: a thin binary over `sessionpipe_core::cli`.

fn main() -> std::process::ExitCode {
    sessionpipe_core::cli::main()
}
