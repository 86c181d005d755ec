//! `tenure watch [PREFIX]`: a live view of every lock, task lock, read-write lock, semaphore and
//! election under PREFIX — the table `tenure locks` prints, redrawn, and below it what happened,
//! latest last (granted, handed over, released, expired, revoked, waiting, elected). The store is
//! read every `--interval`, and at once when a held lock is released where the store pushes
//! releases (Redis, PostgreSQL, etcd). On a terminal it draws on the alternate screen, as `top`
//! does, and leaves the terminal as it found it on Ctrl-C, `SIGTERM` or a hang-up; piped, it
//! prints the table once and then one line per event.

mod events;

use std::collections::VecDeque;
use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use clap::Args;
use tokio::signal::unix::{SignalKind, signal};

use crate::listing::{self, Snapshot};
use crate::locks::table;
use crate::status::now_micros;
use crate::store::{self, Store, StoreKind};
use crate::{Failure, say};
use events::{View, changes};

/// How often the store is read unless `--interval` says otherwise.
const DEFAULT_INTERVAL: Duration = Duration::from_millis(250);
/// The longest a read may take unless `--timeout` says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
/// The events kept on screen.
const EVENTS_SHOWN: usize = 12;
/// The held locks whose releases the store is asked to push at once (the rest are seen at the
/// next read).
const PUSHED: usize = 32;

#[derive(Args, Debug)]
pub(crate) struct WatchArgs {
    /// Watch only the names that start with PREFIX (the name after its kind; a whole name
    /// watches that name and every longer one).
    #[arg(default_value = "")]
    pub(crate) prefix: String,
    /// Read the store every S seconds (default 0.25).
    #[arg(long, value_name = "S", value_parser = crate::seconds, allow_negative_numbers = true)]
    pub(crate) interval: Option<Duration>,
    /// Give up on a read after S seconds (default 5): the view says so and reads again.
    #[arg(long, value_name = "S", value_parser = crate::seconds, allow_negative_numbers = true)]
    pub(crate) timeout: Option<Duration>,
    /// Watch at most N names (default 1000; elections first, then locks); the rest are counted.
    #[arg(long, value_name = "N", default_value_t = 1_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) limit: u32,
}

/// What the screen shows: the last read, what happened, and the store's trouble if any.
struct Screen {
    title: String,
    terminal: bool,
    last: Option<(Snapshot, View)>,
    events: VecDeque<String>,
    trouble: Option<String>,
}

pub(crate) async fn run(backend: Option<&str>, args: WatchArgs) -> Result<i32, Failure> {
    let url = store::url(backend)?;
    if store::target(&url)?.kind() == StoreKind::Memory {
        return Err(Failure::usage("memory: holds nothing outside the process that uses it; give a shared store"));
    }
    let interval = args.interval.unwrap_or(DEFAULT_INTERVAL);
    let timeout = args.timeout.unwrap_or(DEFAULT_TIMEOUT);
    let limit = usize::try_from(args.limit).unwrap_or(usize::MAX);
    let shown =
        if args.prefix.is_empty() { String::from("every name") } else { format!("names under {:?}", args.prefix) };
    let mut screen = Screen {
        title: format!("tenure watch: {shown} on {}", tenure_open::shown_url(&url)),
        terminal: std::io::stdout().is_terminal(),
        last: None,
        events: VecDeque::new(),
        trouble: None,
    };
    let mut stop = Stop::new().map_err(|e| Failure::store(format!("cannot watch for Ctrl-C: {e}")))?;
    let mut store: Option<Store> = None;
    screen.enter();
    let ended = loop {
        if store.is_none() {
            match tokio::time::timeout(timeout, store::open(backend)).await {
                Ok(Ok(opened)) => store = Some(opened),
                Ok(Err(e)) if e.code == crate::EXIT_USAGE => break Err(e),
                Ok(Err(e)) => screen.trouble = Some(e.message),
                Err(_) => screen.trouble = Some(format!("the store did not answer within {timeout:?}")),
            }
        }
        let mut wakeup = None;
        if let Some(open) = &store {
            match read(open, &args.prefix, limit, timeout).await {
                Ok(snapshot) => {
                    wakeup = pushed(open, &snapshot);
                    screen.saw(snapshot);
                }
                Err(trouble) => {
                    screen.trouble = Some(trouble);
                    store = None; // opened again at the next turn
                }
            }
        }
        if screen.draw().is_err() {
            break Ok(0); // the terminal is gone (a hang-up): nobody to show anything to
        }
        let pause = if store.is_some() { interval } else { interval.max(Duration::from_secs(1)) };
        let woken = async {
            match wakeup {
                Some(w) => w.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = woken => {}
            () = stop.wait() => break Ok(0),
        }
    };
    screen.leave();
    if let Some(open) = &store {
        store::close(open).await;
    }
    ended
}

async fn read(store: &Store, prefix: &str, limit: usize, timeout: Duration) -> Result<Snapshot, String> {
    let inspect = store.inspect().ok_or("this store cannot be listed")?;
    match tokio::time::timeout(timeout, listing::read(inspect.as_ref(), prefix, limit)).await {
        Ok(read) => read,
        Err(_) => Err(format!("the store did not answer within {timeout:?} (--timeout)")),
    }
}

/// A wake-up for the next release of any held lock (the first [`PUSHED`]), if the store pushes
/// releases.
fn pushed(store: &Store, snapshot: &Snapshot) -> Option<tenure::backend::Wakeup> {
    let locks = store.locks();
    snapshot
        .locks
        .iter()
        .filter(|l| l.holder.is_some())
        .take(PUSHED)
        .filter_map(|l| locks.wakeup(&l.key))
        .reduce(tenure::backend::Wakeup::or)
}

impl Screen {
    fn saw(&mut self, snapshot: Snapshot) {
        let now = now_micros();
        let view = View::of(&snapshot);
        if let Some((_, before)) = &self.last {
            for line in changes(before, &view, now) {
                let line = format!("{}  {line}", clock(now));
                if !self.terminal {
                    #[allow(clippy::print_stdout)]
                    {
                        println!("{line}");
                    }
                }
                self.events.push_back(line);
            }
            while self.events.len() > EVENTS_SHOWN {
                self.events.pop_front();
            }
        } else if !self.terminal {
            #[allow(clippy::print_stdout)]
            {
                print!("{}", table(&snapshot, now));
            }
        }
        // (on a terminal the screen says it; a line on stderr would be drawn over)
        if let Some(trouble) = self.trouble.take()
            && !self.terminal
        {
            say!("watch: the store answers again (it had failed: {trouble})");
        }
        self.last = Some((snapshot, view));
    }

    /// Redraws the whole screen (on a terminal); piped, says a failed read once on stderr.
    fn draw(&mut self) -> std::io::Result<()> {
        let mut out = std::io::stdout().lock();
        if !self.terminal {
            if let Some(trouble) = &self.trouble {
                say!("watch: {trouble}; reading again");
            }
            return out.flush();
        }
        let now = now_micros();
        let mut text = format!("\x1b[H\x1b[2J{}  {}  (Ctrl-C to leave)\n\n", self.title, clock(now));
        match &self.last {
            Some((snapshot, _)) => text.push_str(&table(snapshot, now)),
            None => text.push_str("reading the store…\n"),
        }
        if let Some(trouble) = &self.trouble {
            text.push_str(&format!("\n! {trouble}; reading again\n"));
        }
        text.push_str("\nEVENTS (latest last)\n");
        for line in &self.events {
            text.push_str(line);
            text.push('\n');
        }
        // (a terminal wants \r\n only in raw mode, which this view does not use)
        out.write_all(text.as_bytes())?;
        out.flush()
    }

    /// The alternate screen, cursor hidden (a terminal only).
    fn enter(&self) {
        if self.terminal {
            let _ = std::io::stdout().write_all(b"\x1b[?1049h\x1b[?25l");
        }
    }

    /// Back to the screen and cursor the user had.
    fn leave(&self) {
        if self.terminal {
            let mut out = std::io::stdout();
            let _ = out.write_all(b"\x1b[?25h\x1b[?1049l");
            let _ = out.flush();
        }
    }
}

/// `HH:MM:SS.mmm` (UTC) of `micros` since the epoch.
fn clock(micros: i64) -> String {
    let ms = micros.div_euclid(1_000);
    let day_ms = ms.rem_euclid(86_400_000);
    let (h, m, s, milli) = (day_ms / 3_600_000, day_ms / 60_000 % 60, day_ms / 1_000 % 60, day_ms % 1_000);
    format!("{h:02}:{m:02}:{s:02}.{milli:03}")
}

/// Ctrl-C, `SIGTERM` or a hang-up (the SSH session ended).
struct Stop {
    interrupt: tokio::signal::unix::Signal,
    term: tokio::signal::unix::Signal,
    hangup: tokio::signal::unix::Signal,
}

impl Stop {
    fn new() -> std::io::Result<Self> {
        // (streams, registered before the first read: a signal between two waits is kept)
        Ok(Self {
            interrupt: signal(SignalKind::interrupt())?,
            term: signal(SignalKind::terminate())?,
            hangup: signal(SignalKind::hangup())?,
        })
    }

    async fn wait(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.term.recv() => {}
            _ = self.hangup.recv() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_clock_reads_utc_hours_to_milliseconds() {
        assert_eq!(super::clock(0), "00:00:00.000");
        assert_eq!(super::clock(((13 * 60 + 5) * 60 + 9) * 1_000_000 + 42_000), "13:05:09.042");
    }
}
