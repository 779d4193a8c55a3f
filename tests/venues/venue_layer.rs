//! Everything a venue is lives in `src/venue/`: no product code elsewhere names one, so
//! adding an exchange is its module and one registry line (ARCHITECTURE.md, "Adding a
//! venue"). Loops over `VenueId::ALL` are how the rest of the code reaches them.

use mergebook::venue::VenueId;
use std::path::{Path, PathBuf};

/// The Rust files under `directory`, recursively.
fn rust_files(directory: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// The product code of a file: without its unit tests (a `#[cfg(test)]` module at its
/// end, where venues are sample data) and without comments.
fn product_code(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .enumerate()
        .take_while(|(_, line)| line.trim() != "#[cfg(test)]")
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
        .map(|(index, line)| (index + 1, line.split(" // ").next().unwrap_or(line)))
        .collect()
}

/// Whether `line` holds `name` as a word of its own (any letter case): `binance` in
/// `VenueId::Binance` or `"binance"`, not inside a longer identifier.
fn names(line: &str, name: &str) -> bool {
    let line = line.to_ascii_lowercase();
    line.match_indices(name).any(|(at, _)| {
        let before = line[..at].chars().next_back();
        let after = line[at + name.len()..].chars().next();
        let is_word = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        !is_word(before) && !is_word(after)
    })
}

#[test]
fn no_product_code_outside_src_venue_names_a_venue() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    for member in ["crates/testkit/src", "crates/tools/src"] {
        rust_files(&root.join(member), &mut files);
    }
    let venue_layer = root.join("src/venue");
    let mut named = Vec::new();
    // A module's unit tests (its `tests.rs`) use venues as sample data.
    let product = |file: &&PathBuf| !file.starts_with(&venue_layer) && !file.ends_with("tests.rs");
    for file in files.iter().filter(product) {
        let text = std::fs::read_to_string(file).unwrap();
        for (line_number, line) in product_code(&text) {
            for venue in VenueId::ALL {
                if names(line, venue.name()) {
                    let file = file.strip_prefix(root).unwrap().display();
                    named.push(format!("{file}:{line_number}: {venue}: {}", line.trim()));
                }
            }
        }
    }
    assert!(
        named.is_empty(),
        "venues named outside src/venue/:\n{}",
        named.join("\n")
    );
    assert!(
        files.len() > 30,
        "the walk found the sources: {}",
        files.len()
    );
}

#[test]
fn the_check_sees_a_venue_in_code_and_not_in_comments_or_tests() {
    let code = "let a = 1;\n// binance in a comment\nlet url = VenueId::Binance.facts().default_url; // bitstamp\n#[cfg(test)]\nmod tests { VenueId::Bitstamp }\n";
    let lines = product_code(code);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(names(lines[1].1, "binance"));
    assert!(!names(lines[1].1, "bitstamp"), "a trailing comment");
    assert!(!names("binanceish", "binance"));
}
