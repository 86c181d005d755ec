//! Reads and transactions: the store's requests built from plain values, and their answers.

use crate::pb::etcdserverpb as rpc;
use crate::pb::mvccpb::KeyValue;
use rpc::compare::{CompareTarget, TargetUnion};
use rpc::range_request::{SortOrder as RangeOrder, SortTarget as RangeTarget};
use rpc::request_op::Request;
use rpc::response_op::Response;

pub(crate) use rpc::compare::CompareResult as CompareOp;
pub(crate) use rpc::range_request::{SortOrder, SortTarget};

impl KeyValue {
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    pub(crate) fn value(&self) -> &[u8] {
        &self.value
    }

    /// The key as text, if it is UTF-8.
    pub(crate) fn key_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.key).ok()
    }

    /// The value as text, if it is UTF-8.
    pub(crate) fn value_str(&self) -> Option<&str> {
        std::str::from_utf8(&self.value).ok()
    }

    /// The revision that created the key (it stays while the key lives).
    pub(crate) fn create_revision(&self) -> i64 {
        self.create_revision
    }

    /// The revision of the key's last write.
    pub(crate) fn mod_revision(&self) -> i64 {
        self.mod_revision
    }

    /// The lease the key is on (0: none).
    pub(crate) fn lease(&self) -> i64 {
        self.lease
    }
}

/// The range of every key starting with `prefix`, as etcd takes it: from the prefix to the
/// prefix with its last byte below 0xff incremented and what follows dropped. Every key when
/// there is no such byte (an end of `[0]`), and from `[0]` when the prefix is empty (etcd
/// refuses an empty key).
pub(super) fn prefix_range(prefix: &[u8]) -> (Vec<u8>, Vec<u8>) {
    if prefix.is_empty() {
        return (vec![0], vec![0]);
    }
    match prefix.iter().rposition(|b| *b < 0xff) {
        Some(at) => {
            let mut end = prefix[..=at].to_vec();
            end[at] += 1;
            (prefix.to_vec(), end)
        }
        None => (prefix.to_vec(), vec![0]),
    }
}

/// Which keys a read returns, in what order, and what of them.
#[derive(Clone, Debug, Default)]
pub(crate) struct GetOptions {
    prefix: bool,
    sort: Option<(SortTarget, SortOrder)>,
    keys_only: bool,
    count_only: bool,
    serializable: bool,
}

impl GetOptions {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Every key starting with the key.
    pub(crate) fn with_prefix(mut self) -> Self {
        self.prefix = true;
        self
    }

    /// Sorted by `target`, in `order`, by the server.
    pub(crate) fn with_sort(mut self, target: SortTarget, order: SortOrder) -> Self {
        self.sort = Some((target, order));
        self
    }

    /// The keys without their values.
    pub(crate) fn with_keys_only(mut self) -> Self {
        self.keys_only = true;
        self
    }

    /// Only how many keys there are.
    pub(crate) fn with_count_only(mut self) -> Self {
        self.count_only = true;
        self
    }

    /// Answered by the member alone, without a consensus round.
    pub(crate) fn with_serializable(mut self) -> Self {
        self.serializable = true;
        self
    }

    /// The range request for `key`.
    pub(crate) fn range(self, key: Vec<u8>) -> rpc::RangeRequest {
        let (key, range_end) = if self.prefix { prefix_range(&key) } else { (key, Vec::new()) };
        let (target, order) = self.sort.unwrap_or((RangeTarget::Key, RangeOrder::None));
        rpc::RangeRequest {
            key,
            range_end,
            sort_order: order.into(),
            sort_target: target.into(),
            serializable: self.serializable,
            keys_only: self.keys_only,
            count_only: self.count_only,
            ..Default::default()
        }
    }
}

/// How a key is put.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PutOptions {
    lease: i64,
}

impl PutOptions {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// On lease `id`: deleted when it ends.
    pub(crate) fn with_lease(mut self, id: i64) -> Self {
        self.lease = id;
        self
    }
}

/// A condition of a transaction on a key (or, `with_prefix`, on every key under it).
#[derive(Clone, Debug)]
pub(crate) struct Compare(rpc::Compare);

impl Compare {
    fn new(key: impl Into<Vec<u8>>, op: CompareOp, target: CompareTarget, value: TargetUnion) -> Self {
        let compare = rpc::Compare {
            result: op.into(),
            target: target.into(),
            key: key.into(),
            target_union: Some(value),
            range_end: Vec::new(),
        };
        Self(compare)
    }

    /// The key's create revision (0: no such key) compared with `revision`.
    pub(crate) fn create_revision(key: impl Into<Vec<u8>>, op: CompareOp, revision: i64) -> Self {
        Self::new(key, op, CompareTarget::Create, TargetUnion::CreateRevision(revision))
    }

    /// The revision of the key's last write compared with `revision`.
    pub(crate) fn mod_revision(key: impl Into<Vec<u8>>, op: CompareOp, revision: i64) -> Self {
        Self::new(key, op, CompareTarget::Mod, TargetUnion::ModRevision(revision))
    }

    /// The key's lease compared with `id`.
    pub(crate) fn lease(key: impl Into<Vec<u8>>, op: CompareOp, id: i64) -> Self {
        Self::new(key, op, CompareTarget::Lease, TargetUnion::Lease(id))
    }

    /// Holds for every key under the key (none: it holds).
    pub(crate) fn with_prefix(mut self) -> Self {
        (self.0.key, self.0.range_end) = prefix_range(&self.0.key);
        self
    }
}

/// An operation of a transaction.
#[derive(Clone, Debug)]
pub(crate) struct TxnOp(Request);

impl TxnOp {
    /// Puts `value` under `key`.
    pub(crate) fn put(key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>, options: Option<PutOptions>) -> Self {
        let lease = options.unwrap_or_default().lease;
        Self(Request::RequestPut(rpc::PutRequest { key: key.into(), value: value.into(), lease, ..Default::default() }))
    }

    /// Reads the keys `key` and `options` name.
    pub(crate) fn get(key: impl Into<Vec<u8>>, options: Option<GetOptions>) -> Self {
        Self(Request::RequestRange(options.unwrap_or_default().range(key.into())))
    }

    /// Deletes `key`.
    pub(crate) fn delete(key: impl Into<Vec<u8>>) -> Self {
        Self(Request::RequestDeleteRange(rpc::DeleteRangeRequest { key: key.into(), ..Default::default() }))
    }
}

/// A transaction: if every condition holds, the first operations, else the others.
#[derive(Clone, Debug, Default)]
pub(crate) struct Txn(rpc::TxnRequest);

impl Txn {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    pub(crate) fn when(mut self, compares: impl IntoIterator<Item = Compare>) -> Self {
        self.0.compare.extend(compares.into_iter().map(|c| c.0));
        self
    }

    pub(crate) fn and_then(mut self, ops: impl IntoIterator<Item = TxnOp>) -> Self {
        self.0.success.extend(ops.into_iter().map(|op| rpc::RequestOp { request: Some(op.0) }));
        self
    }

    pub(crate) fn or_else(mut self, ops: impl IntoIterator<Item = TxnOp>) -> Self {
        self.0.failure.extend(ops.into_iter().map(|op| rpc::RequestOp { request: Some(op.0) }));
        self
    }

    pub(crate) fn into_request(self) -> rpc::TxnRequest {
        self.0
    }
}

/// The keys a read found.
#[derive(Debug)]
pub(crate) struct GetResponse(pub(crate) rpc::RangeResponse);

impl GetResponse {
    /// The store's revision when it read.
    pub(crate) fn revision(&self) -> i64 {
        self.0.header.as_ref().map_or(0, |h| h.revision)
    }

    pub(crate) fn take_kvs(&mut self) -> Vec<KeyValue> {
        std::mem::take(&mut self.0.kvs)
    }
}

/// What a transaction did.
#[derive(Debug)]
pub(crate) struct TxnResponse(pub(crate) rpc::TxnResponse);

/// The answer to one operation of a transaction.
#[derive(Debug)]
pub(crate) enum TxnOpResponse {
    Get(GetResponse),
    Other,
}

impl TxnResponse {
    /// Whether every condition held (and so the first operations ran).
    pub(crate) fn succeeded(&self) -> bool {
        self.0.succeeded
    }

    /// The store's revision after the transaction (its writes' revision, if it wrote).
    pub(crate) fn revision(&self) -> i64 {
        self.0.header.as_ref().map_or(0, |h| h.revision)
    }

    /// The answers to the operations that ran, in order.
    pub(crate) fn op_responses(&self) -> Vec<TxnOpResponse> {
        let answer = |op: &rpc::ResponseOp| match &op.response {
            Some(Response::ResponseRange(range)) => TxnOpResponse::Get(GetResponse(range.clone())),
            _ => TxnOpResponse::Other,
        };
        self.0.responses.iter().map(answer).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prefix_ends_past_its_last_byte_below_0xff_and_no_prefix_is_every_key() {
        let range = |prefix: &[u8]| prefix_range(prefix);
        assert_eq!(range(b"lock:a/"), (b"lock:a/".to_vec(), b"lock:a0".to_vec()));
        assert_eq!(range(b"a\xff"), (b"a\xff".to_vec(), b"b".to_vec()));
        assert_eq!(range(b"\xff\xff"), (b"\xff\xff".to_vec(), vec![0]));
        assert_eq!(range(b""), (vec![0], vec![0]));
        assert_eq!(GetOptions::new().with_prefix().range(Vec::new()).key, [0], "etcd refuses an empty key");
    }

    #[test]
    fn requests_carry_what_their_options_say() {
        let read =
            GetOptions::new().with_prefix().with_sort(SortTarget::Create, SortOrder::Ascend).range(b"p/".to_vec());
        assert_eq!((read.range_end.as_slice(), read.sort_target, read.sort_order), (&b"p0"[..], 2, 1));
        let compare = Compare::mod_revision("p/", CompareOp::Less, 7).with_prefix().0;
        assert_eq!((compare.result, compare.target, compare.range_end), (2, 2, b"p0".to_vec()));
        assert_eq!(compare.target_union, Some(TargetUnion::ModRevision(7)));
        let txn = Txn::new()
            .when([Compare::lease("k", CompareOp::Equal, 9)])
            .and_then([TxnOp::put("k", "v", Some(PutOptions::new().with_lease(9)))])
            .or_else([TxnOp::delete("k")])
            .into_request();
        assert_eq!((txn.compare.len(), txn.success.len(), txn.failure.len()), (1, 1, 1));
        let Some(Request::RequestPut(put)) = &txn.success[0].request else { panic!("a put: {txn:?}") };
        assert_eq!((put.key.as_slice(), put.value.as_slice(), put.lease), (&b"k"[..], &b"v"[..], 9));
    }
}
