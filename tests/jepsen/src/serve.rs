//! What client processes say to the harness, one line each way over a loopback TCP connection,
//! so that clients in any language report their operations and reach the fenced resource alike:
//!
//! | client sends             | harness answers          | what it does                               |
//! |--------------------------|--------------------------|--------------------------------------------|
//! | `hello P NAME PID`       | `ok`                     | the connection is process P, on lock NAME  |
//! | `invoke acquire|release` | `ok`                     | records the invocation                     |
//! | `ok [FENCE]`/`fail`/`info` | `ok`                   | completes the open invocation              |
//! | `read FENCE`             | `values V...`            | the set, read under FENCE                  |
//! | `add FENCE V...`         | `accepted N`/`refused N` | writes back the set read with element N    |
//! | `write FENCE`            | `accepted`/`refused`     | a semaphore holder enters or leaves        |
//!
//! A line the harness cannot take is answered `error ...` and noted as a problem of the run.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

use crate::history::{F, Kind};
use crate::record::Recorder;

/// Listens on a free loopback port; returns its address.
pub(crate) fn start(recorder: Arc<Recorder>) -> std::io::Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let address = listener.local_addr()?.to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let recorder = recorder.clone();
            std::thread::spawn(move || connection(&recorder, stream));
        }
    });
    Ok(address)
}

/// Who a connection speaks for, once it said hello.
struct Session {
    process: u32,
    name: String,
}

fn connection(recorder: &Recorder, stream: TcpStream) {
    let Ok(mut out) = stream.try_clone() else { return };
    let mut session: Option<Session> = None;
    // Every line is handled, even once the client is gone (a process that exits while its last
    // line waits for an answer): the client's exit is settled only when its connections are.
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { break };
        let before = session.as_ref().map(|s| s.process);
        let answer = answer(recorder, &mut session, &line).unwrap_or_else(|problem| {
            let who = session.as_ref().map_or("a client".to_owned(), |s| format!("process {}", s.process));
            recorder.problem(format!("{who} sent {line:?}: {problem}"));
            format!("error {problem}")
        });
        let after = session.as_ref().map(|s| s.process);
        if after != before {
            before.into_iter().for_each(|p| recorder.connected(p, false));
            after.into_iter().for_each(|p| recorder.connected(p, true));
        }
        let _ = writeln!(out, "{answer}");
    }
    if let Some(session) = session {
        recorder.connected(session.process, false);
    }
}

fn answer(recorder: &Recorder, session: &mut Option<Session>, line: &str) -> Result<String, String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let number = |word: Option<&&str>| -> Result<u64, String> {
        word.ok_or("a number is missing")?.parse::<u64>().map_err(|e| format!("not a number: {e}"))
    };
    if let ["hello", process, name, pids @ ..] = words.as_slice() {
        let process = process.parse::<u32>().map_err(|e| format!("bad process: {e}"))?;
        for pid in pids {
            recorder.register(process, pid.parse::<i32>().map_err(|e| format!("bad pid: {e}"))?);
        }
        *session = Some(Session { process, name: (*name).to_owned() });
        return Ok("ok".into());
    }
    let Some(Session { process, name }) = session.as_ref() else { return Err("no hello yet".into()) };
    let process = *process;
    match words.as_slice() {
        ["invoke", "acquire"] => recorder.invoke(process, F::Acquire, name).map(|()| "ok".into()),
        ["invoke", "release"] => recorder.invoke(process, F::Release, name).map(|()| "ok".into()),
        ["ok", rest @ ..] => {
            let fence = rest.first().map(|_| number(rest.first())).transpose()?;
            recorder.complete(process, Kind::Ok, fence).map(|_| "ok".into())
        }
        ["fail"] => recorder.complete(process, Kind::Fail, None).map(|_| "ok".into()),
        ["info"] => recorder.complete(process, Kind::Info, None).map(|_| "ok".into()),
        ["read", fence] => {
            let values: Vec<String> =
                recorder.read(process, name, number(Some(fence))?).iter().map(u64::to_string).collect();
            Ok(format!("values {}", values.join(" ")).trim_end().to_owned())
        }
        ["add", fence, values @ ..] => {
            let fence = number(Some(fence))?;
            let read = values.iter().map(|v| number(Some(v))).collect::<Result<Vec<u64>, String>>()?;
            let (value, accepted) = recorder.add(process, name, fence, read)?;
            Ok(format!("{} {value}", if accepted { "accepted" } else { "refused" }))
        }
        ["write", fence] => {
            let accepted = recorder.write(process, name, number(Some(fence))?)?;
            Ok(if accepted { "accepted" } else { "refused" }.into())
        }
        _ => Err("unknown request".into()),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead as _, BufReader, Write as _};

    use crate::history::{Kind, ops};
    use crate::record::Recorder;
    use crate::{mutex, set};

    /// A client that says `lines` in turn; the answers.
    fn client(address: &str, lines: &[&str]) -> Vec<String> {
        let stream = std::net::TcpStream::connect(address).expect("the harness");
        let mut out = stream.try_clone().expect("a second handle");
        let mut answers = BufReader::new(stream).lines();
        let mut said = Vec::new();
        for line in lines {
            writeln!(out, "{line}").expect("sent");
            said.push(answers.next().expect("an answer").expect("a line"));
        }
        said
    }

    #[test]
    fn the_resource_refuses_a_stale_fence_and_the_record_shows_it() {
        let recorder = Recorder::new(true, 1);
        let address = super::start(recorder.clone()).expect("listening");
        let first = ["hello 1 a 11", "invoke acquire", "ok 5", "read 5"];
        assert_eq!(client(&address, &first), ["ok", "ok", "ok", "values"]);
        // Process 2 is granted a higher fence and reads: process 1's write, after, is refused.
        let second = ["hello 2 a 12", "invoke acquire", "ok 6", "read 6", "add 6", "invoke release", "ok"];
        assert_eq!(client(&address, &second), ["ok", "ok", "ok", "values", "accepted 1", "ok", "ok"]);
        assert_eq!(client(&address, &["hello 1 a 11", "add 5", "read 5"]), ["ok", "refused 2", "values 1"]);
        assert_eq!(
            client(&address, &["hello 3 a", "ok 1"])[1],
            "error process 3 completed an operation it had not invoked"
        );
        assert_eq!(recorder.problems().len(), 1);
        recorder.final_reads(0);
        let events = recorder.events();
        assert_eq!(events.iter().filter(|e| e.kind == Kind::Fail).count(), 1, "{events:?}");
        let ops = ops(&events).expect("paired");
        assert!(mutex::check(&ops).is_valid() && mutex::check_resource(&ops).is_valid());
        assert!(set::check(&ops).is_valid(), "the refused element is no lost one");
    }

    #[test]
    fn the_next_reader_is_stopped_before_its_answer_when_the_nemesis_asks() {
        let recorder = Recorder::new(true, 1);
        let address = super::start(recorder.clone()).expect("listening");
        let mut child = std::process::Command::new("sleep").arg("60").spawn().expect("sleep");
        let told = recorder.pause_next_reader();
        let hello = format!("hello 7 a {}", child.id());
        assert_eq!(client(&address, &[&hello, "invoke acquire", "ok 3", "read 3"])[3], "values");
        let (process, pids) = told.try_recv().expect("the reader was named");
        assert_eq!((process, pids), (7, vec![i32::try_from(child.id()).expect("a pid")]));
        tenure_conformance::faults::wait_stopped(child.id());
        crate::record::signal(&[i32::try_from(child.id()).expect("a pid")], nix::sys::signal::Signal::SIGCONT);
        assert_eq!(client(&address, &["hello 8 a", "read 4"]), ["ok", "values"], "one reader only");
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Three holders of a semaphore of 2 permits enter in turn, then leave in turn. The first one's
    /// leaving write is refused by a fenced resource (two newer tokens were seen); an unfenced one
    /// takes it, and the capacity checker sees three inside at once.
    fn semaphore(fenced: bool) -> (Vec<String>, crate::Verdict) {
        let recorder = Recorder::new(fenced, 2);
        let address = super::start(recorder.clone()).expect("listening");
        let mut answers = Vec::new();
        for p in 1..=3 {
            answers.extend(client(
                &address,
                &[&format!("hello {p} s"), "invoke acquire", &format!("ok {p}"), &format!("write {p}")],
            ));
        }
        for p in 1..=3 {
            answers.extend(client(&address, &[&format!("hello {p} s"), &format!("write {p}")]));
        }
        let ops = ops(&recorder.events()).expect("paired");
        assert!(mutex::check(&ops).is_valid() && mutex::owners(&ops).is_valid());
        (answers.into_iter().filter(|a| a != "ok").collect(), crate::semaphore::check(&ops, 2))
    }

    #[test]
    fn a_fenced_semaphore_resource_refuses_the_oldest_of_three_and_stays_within_its_permits() {
        let (answers, capacity) = semaphore(true);
        assert_eq!(answers, ["accepted", "accepted", "accepted", "refused", "accepted", "accepted"]);
        assert!(capacity.is_valid(), "{capacity:?}");
    }

    #[test]
    fn an_unfenced_semaphore_resource_takes_three_holders_and_the_checker_says_so() {
        let (answers, capacity) = semaphore(false);
        assert!(answers.iter().all(|a| a == "accepted"), "{answers:?}");
        let kinds: Vec<&str> = capacity.anomalies.iter().map(|a| a.kind).collect();
        assert_eq!(kinds, ["over-capacity"]);
    }

    #[test]
    fn an_unfenced_resource_loses_an_element_and_the_checkers_say_so() {
        let recorder = Recorder::new(false, 1);
        let address = super::start(recorder.clone()).expect("listening");
        client(&address, &["hello 1 a", "invoke acquire", "ok 5"]);
        client(&address, &["hello 2 a", "invoke acquire", "ok 6", "add 6"]);
        // Process 1 writes back what it read before process 2's add: element 1 is overwritten.
        assert_eq!(client(&address, &["hello 1 a", "add 5"]), ["ok", "accepted 2"]);
        recorder.final_reads(0);
        let ops = ops(&recorder.events()).expect("paired");
        let kinds = |v: crate::Verdict| v.anomalies.iter().map(|a| a.kind).collect::<Vec<_>>();
        assert_eq!(kinds(set::check(&ops)), ["lost"]);
        assert_eq!(kinds(mutex::check_resource(&ops)), ["accepted-stale"]);
    }
}
