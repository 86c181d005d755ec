//! The protocol code in `backends/etcd/src/pb` is exactly what etcd's proto files in
//! `backends/etcd/proto` generate. `TENURE_REGENERATE=1` writes it instead of comparing (after a
//! change of the proto files or of the generator's version).

use std::path::Path;

use tenure_etcd_codegen::{GENERATED, generate};

#[test]
fn the_committed_protocol_code_is_what_the_proto_files_generate() {
    let etcd = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = std::env::temp_dir().join(format!("tenure-etcd-pb-{}", std::process::id()));
    generate(&etcd.join("proto"), &out).unwrap_or_else(|e| panic!("{e}"));
    let produced: Vec<String> = std::fs::read_dir(&out)
        .expect("the output folder")
        .map(|entry| entry.expect("an entry").file_name().to_string_lossy().into_owned())
        .collect();
    let committed = etcd.join("src/pb");
    let regenerate = std::env::var_os("TENURE_REGENERATE").is_some();
    let mut stale = Vec::new();
    for name in GENERATED {
        let fresh = std::fs::read_to_string(out.join(name)).unwrap_or_else(|e| panic!("{name} was not generated: {e}"));
        if regenerate {
            std::fs::write(committed.join(name), &fresh).expect("src/pb is writable");
        } else if std::fs::read_to_string(committed.join(name)).ok().as_deref() != Some(fresh.as_str()) {
            stale.push(name);
        }
    }
    std::fs::remove_dir_all(&out).expect("the temporary folder is removed");
    let mut unexpected: Vec<&String> = produced.iter().filter(|p| !GENERATED.contains(&p.as_str())).collect();
    unexpected.sort();
    assert!(unexpected.is_empty(), "the generator wrote files src/pb does not include: {unexpected:?}");
    assert!(
        stale.is_empty(),
        "backends/etcd/src/pb/{stale:?} differ from what backends/etcd/proto generates: \
         run TENURE_REGENERATE=1 cargo test -p tenure-etcd-codegen"
    );
}
