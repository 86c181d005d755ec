//! Where one RESP2/RESP3 reply ends in a buffer, so a connection can hand complete replies to
//! the redis crate's parser ([`redis::parse_redis_value`]) and keep the rest for later.
//!
//! The scan is iterative (a counter of values still owed, no recursion), so a deeply nested or
//! hostile reply cannot overflow the stack; bulk payloads are skipped by their length.

use redis::Value;

/// A reply that cannot be RESP: the connection cannot find the next reply's start after it.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Malformed(pub(crate) String);

/// The length of the first complete reply in `buf`, `None` while it is incomplete.
pub(crate) fn complete(buf: &[u8]) -> Result<Option<usize>, Malformed> {
    let mut at = 0;
    // Values still to read: one reply, plus the elements of every aggregate opened so far.
    let mut owed: u64 = 1;
    while owed > 0 {
        let Some(end) = line_end(buf, at) else {
            return Ok(None);
        };
        let (kind, head) = (buf[at], &buf[at + 1..end]);
        at = end + 2;
        owed -= 1;
        match kind {
            b'+' | b'-' | b':' | b'_' | b'#' | b',' | b'(' => {}
            b'$' | b'!' | b'=' => {
                let Some(len) = length(head)? else { continue };
                let Some(stop) = at.checked_add(len).filter(|s| s.checked_add(2).is_some()) else {
                    return Err(malformed(kind, head));
                };
                if buf.len() < stop + 2 {
                    return Ok(None);
                }
                if &buf[stop..stop + 2] != b"\r\n" {
                    return Err(Malformed(format!("a {len}-byte string of the reply does not end with CRLF")));
                }
                at = stop + 2;
            }
            b'*' | b'~' | b'>' => owed += length(head)?.unwrap_or(0) as u64,
            b'%' => owed += 2 * length(head)?.unwrap_or(0) as u64,
            // Attributes precede the value they describe.
            b'|' => owed += 2 * length(head)?.unwrap_or(0) as u64 + 1,
            _ => return Err(malformed(kind, head)),
        }
    }
    Ok(Some(at))
}

/// The value of a whole reply `reply` (from [`complete`]) of the kinds a lock's calls get back
/// — an integer, a string, nothing, `OK` — read without the general parser; `None` for any other
/// kind (errors, aggregates), which the redis crate's parser reads.
pub(crate) fn simple(reply: &[u8]) -> Option<Value> {
    let (&kind, rest) = reply.split_first()?;
    let line = &rest[..line_end(rest, 0)?];
    match kind {
        b':' => std::str::from_utf8(line).ok()?.parse().ok().map(Value::Int),
        b'_' => Some(Value::Nil),
        b'$' if line == b"-1" => Some(Value::Nil),
        b'$' => {
            let start = line.len() + 2;
            Some(Value::BulkString(rest.get(start..rest.len().checked_sub(2)?)?.to_vec()))
        }
        b'+' if line == b"OK" => Some(Value::Okay),
        b'+' => Some(Value::SimpleString(String::from_utf8(line.to_vec()).ok()?)),
        _ => None,
    }
}

/// The index of the CR of the first CRLF at or after `from`.
fn line_end(buf: &[u8], from: usize) -> Option<usize> {
    buf.get(from..)?.windows(2).position(|w| w == b"\r\n").map(|i| from + i)
}

/// A length field: `None` for RESP2's null (-1).
fn length(head: &[u8]) -> Result<Option<usize>, Malformed> {
    let text = std::str::from_utf8(head).ok();
    match text.and_then(|t| t.parse::<i64>().ok()) {
        Some(-1) => Ok(None),
        Some(n) if n >= 0 => usize::try_from(n).map(Some).map_err(|_| malformed(b'$', head)),
        _ => Err(Malformed(format!("the reply has no valid length: {:?}", String::from_utf8_lossy(head)))),
    }
}

fn malformed(kind: u8, head: &[u8]) -> Malformed {
    let head: String = String::from_utf8_lossy(head).chars().take(32).collect();
    Malformed(format!("a reply starts with {:?} ({head:?}), which is not RESP", char::from(kind)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn len(reply: &str) -> Result<Option<usize>, Malformed> {
        complete(reply.as_bytes())
    }

    #[test]
    fn simple_replies_end_at_their_line() {
        for reply in ["+OK\r\n", "-ERR no\r\n", ":42\r\n", "_\r\n", "#t\r\n", ",1.5\r\n", "(123\r\n"] {
            assert_eq!(len(reply), Ok(Some(reply.len())), "{reply:?}");
            assert_eq!(len(&format!("{reply}+next\r\n")), Ok(Some(reply.len())), "{reply:?}");
        }
    }

    #[test]
    fn strings_are_skipped_by_length_even_holding_crlf() {
        assert_eq!(len("$4\r\na\r\nb\r\n"), Ok(Some(10)));
        assert_eq!(len("$-1\r\n"), Ok(Some(5)));
        assert_eq!(len("=9\r\ntxt:a\r\nbc\r\n"), Ok(Some(15)));
        assert_eq!(len("$4\r\nab"), Ok(None));
        assert_eq!(len("$4\r\nabcd\r"), Ok(None));
    }

    #[test]
    fn aggregates_end_after_every_element_nested_or_not() {
        let push = ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$0\r\n\r\n";
        assert_eq!(len(push), Ok(Some(push.len())));
        let map = "%2\r\n+a\r\n*2\r\n:1\r\n:2\r\n+b\r\n_\r\n";
        assert_eq!(len(map), Ok(Some(map.len())));
        assert_eq!(len("*0\r\n"), Ok(Some(4)));
        assert_eq!(len("*-1\r\n"), Ok(Some(5)));
        let attributed = "|1\r\n+key\r\n+value\r\n:7\r\n";
        assert_eq!(len(attributed), Ok(Some(attributed.len())));
        for cut in 1..map.len() {
            assert_eq!(len(&map[..cut]), Ok(None), "cut at {cut}");
        }
    }

    #[test]
    fn simple_replies_read_as_the_redis_crate_reads_them() {
        for reply in
            [":42\r\n", ":-7\r\n", "_\r\n", "$-1\r\n", "$0\r\n\r\n", "$4\r\na\r\nb\r\n", "+OK\r\n", "+PONG\r\n"]
        {
            let ours = simple(reply.as_bytes());
            assert_eq!(ours, Some(redis::parse_redis_value(reply.as_bytes()).expect("parses")), "{reply:?}");
        }
        for other in ["-ERR x\r\n", "*1\r\n:1\r\n", ">2\r\n+a\r\n+b\r\n", "#t\r\n"] {
            assert_eq!(simple(other.as_bytes()), None, "{other:?}");
        }
    }

    #[test]
    fn deep_nesting_needs_no_recursion() {
        let deep = "*1\r\n".repeat(100_000) + ":1\r\n";
        assert_eq!(len(&deep), Ok(Some(deep.len())));
    }

    #[test]
    fn what_is_not_resp_is_refused_with_its_start() {
        let e = len("HTTP/1.1 400\r\n").expect_err("not RESP");
        assert!(e.0.contains("'H'"), "{e:?}");
        assert!(len("$x\r\n").is_err());
        assert!(len("*-5\r\n").is_err());
        assert!(len("$2\r\nabcd\r\n").is_err());
        assert!(len("$99999999999999999999\r\n").is_err());
    }
}
