//! What the command's test files share: the built `tenure`, run on a store as a user runs it.
#![allow(dead_code)] // (each test file uses what it needs)

use std::process::{Command, Output};

/// The `tenure` binary under test.
pub(crate) const TENURE: &str = env!("CARGO_BIN_EXE_tenure");

/// `tenure --backend URL ARGS…`, with no store taken from this environment.
pub(crate) fn tenure(url: &str, args: &[&str]) -> Command {
    let mut command = Command::new(TENURE);
    command.arg("--backend").arg(url).args(args).env_remove("TENURE_BACKEND");
    command
}

/// [`tenure`], run to its end.
pub(crate) fn run(url: &str, args: &[&str]) -> Output {
    tenure(url, args).output().expect("run tenure")
}
