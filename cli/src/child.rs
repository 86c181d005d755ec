//! The command run under a lease: started in its own process group, stopped with TERM and then
//! KILL, its exit status passed on as the shell does.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{Child, Command};

use crate::Failure;

/// A running command.
pub(crate) struct Running {
    child: Child,
    group: Option<Pid>,
}

/// Starts `argv` with `env` added, in a new process group (so a stop reaches what it started).
pub(crate) fn start(argv: &[String], env: &[(&str, String)]) -> Result<Running, Failure> {
    let (program, args) = argv.split_first().ok_or_else(|| Failure::usage("no command given after --"))?;
    let mut command = Command::new(program);
    command.args(args).envs(env.iter().map(|(k, v)| (*k, v))).stdin(Stdio::inherit()).process_group(0);
    let child = command.spawn().map_err(|e| {
        let code = if e.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
        Failure::new(code, format!("cannot run {program}: {e}"))
    })?;
    let group = child.id().and_then(|id| i32::try_from(id).ok()).map(Pid::from_raw);
    Ok(Running { child, group })
}

impl Running {
    /// Waits for the command to exit.
    pub(crate) async fn wait(&mut self) -> Result<ExitStatus, Failure> {
        self.child.wait().await.map_err(|e| Failure::new(1, format!("cannot wait for the command: {e}")))
    }

    /// Sends `signal` to the command's process group.
    pub(crate) fn signal(&self, signal: Signal) {
        if let Some(group) = self.group {
            let _ = killpg(group, signal);
        }
    }

    /// Stops the command: TERM, then KILL if it has not exited after `grace`.
    pub(crate) async fn stop(&mut self, grace: Duration) -> Result<ExitStatus, Failure> {
        self.signal(Signal::SIGTERM);
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => status.map_err(|e| Failure::new(1, format!("cannot wait for the command: {e}"))),
            Err(_) => {
                self.signal(Signal::SIGKILL);
                self.wait().await
            }
        }
    }
}

/// The exit code the shell would report for `status`: the code, or 128 + the signal.
pub(crate) fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

/// Runs `--on-lost`'s shell command with `env` (the lock's variables and the cause) and waits for
/// it; its failure is said, and changes nothing of tenure's exit (70: the lease was lost).
pub(crate) async fn on_lost(shell: &str, env: &[(&str, String)]) {
    let mut command = Command::new("sh");
    command.arg("-c").arg(shell).envs(env.iter().map(|(k, v)| (*k, v))).stdin(Stdio::null());
    match command.status().await {
        Ok(status) if status.success() => {}
        Ok(status) => crate::say!("--on-lost exited {}", exit_code(status)),
        Err(e) => crate::say!("--on-lost could not run: {e}"),
    }
}
