//! `unsafe` lives on one island, the mailbox crate. mergebook denies `unsafe_code`; this
//! test makes sure the only source that allows it is `crates/mailbox/src/lib.rs`.

use std::path::Path;

fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn only_the_mailbox_allows_unsafe_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    assert!(
        lib.contains("#![deny(unsafe_code)]"),
        "src/lib.rs must deny unsafe_code"
    );
    let island = std::fs::read_to_string(root.join("crates/mailbox/src/lib.rs")).unwrap();
    assert!(
        island.contains("#![deny(unsafe_code)]"),
        "the mailbox allows unsafe item by item, each with its SAFETY comment"
    );
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("crates"), &mut files);
    let allowing: Vec<_> = files
        .iter()
        .filter(|path| {
            std::fs::read_to_string(path)
                .unwrap()
                .contains("allow(unsafe_code)")
        })
        .map(|path| {
            path.strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(allowing, ["crates/mailbox/src/lib.rs"]);
}
