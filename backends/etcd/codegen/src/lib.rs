//! tenure-etcd's protocol code, generated: etcd's proto files (`backends/etcd/proto`) compiled
//! by `protox`, a protobuf compiler written in Rust, and turned into message types and gRPC
//! clients by `tonic-prost-build`, for the services and methods the store calls. The output is
//! kept in `backends/etcd/src/pb`, so that building Tenure needs no `protoc`; this crate's test
//! fails when it differs from what the proto files generate (`TENURE_REGENERATE=1` writes it).

use std::path::Path;

/// The RPCs the store calls, by service: the rest of etcd's API is left out of the client.
pub const CALLED: [(&str, &[&str]); 4] = [
    ("KV", &["Range", "Put", "Txn"]),
    ("Watch", &["Watch"]),
    ("Lease", &["LeaseGrant", "LeaseRevoke", "LeaseKeepAlive", "LeaseTimeToLive"]),
    ("Auth", &["Authenticate"]),
];

/// The files [`generate`] writes, one per protobuf package.
pub const GENERATED: [&str; 3] = ["etcdserverpb.rs", "mvccpb.rs", "authpb.rs"];

/// Generates the protocol code of the proto files under `proto` into `out`.
pub fn generate(proto: &Path, out: &Path) -> Result<(), String> {
    let mut files = protox::compile(["etcd/api/etcdserverpb/rpc.proto"], [proto])
        .map_err(|e| format!("protox cannot compile {}: {e}", proto.display()))?;
    // Only etcd's own packages become code (the others are imported for their options).
    files.file.retain(|f| matches!(f.package(), "etcdserverpb" | "mvccpb" | "authpb"));
    for file in &mut files.file {
        file.service.retain(|s| CALLED.iter().any(|(name, _)| *name == s.name()));
        for service in &mut file.service {
            if let Some((_, methods)) = CALLED.iter().find(|(name, _)| *name == service.name()) {
                service.method.retain(|m| methods.contains(&m.name()));
            }
        }
    }
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    tonic_prost_build::configure()
        .build_server(false)
        .build_transport(false)
        .out_dir(out)
        .compile_fds(files)
        .map_err(|e| format!("tonic-prost-build failed: {e}"))
}
