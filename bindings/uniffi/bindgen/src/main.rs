//! `uniffi-bindgen`, built from the uniffi version `tenure-uniffi` uses (a bindgen of another
//! version cannot read its metadata): `cargo run -p tenure-uniffi-bindgen -- generate --library
//! target/release/libtenure_uniffi.so --language kotlin --out-dir …`.

fn main() {
    uniffi::uniffi_bindgen_main();
}
