//! Each action family's module header lists every action the family
//! handles, and every registered action is handled by exactly one family:
//! a newcomer finds an action by its file's first line — the family the
//! action's registry row names.

use digipology_kernel::ActionType;
use std::path::Path;

#[test]
fn every_action_is_listed_in_the_header_of_exactly_one_family() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/actions");
    let mut headers = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("actions dir").flatten() {
        let p = entry.path();
        if p.file_name().is_some_and(|n| n == "mod.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("read");
        let header: String = text
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .collect::<Vec<_>>()
            .join(" ");
        headers.push((p, header));
    }
    let mut count = 0;
    for ty in ActionType::ALL {
        let name = ty.name();
        let listed: Vec<_> = headers
            .iter()
            .filter(|(_, h)| {
                h.split(|c: char| c == ',' || c.is_whitespace())
                    .any(|w| w.trim_end_matches('.') == name)
            })
            .map(|(p, _)| p.display().to_string())
            .collect();
        assert_eq!(listed.len(), 1, "{name} is listed in {listed:?}");
        // The file whose header lists it is the family its registry row
        // names, and that file defines the named function.
        let (family, function) = ty.handler().split_once("::").expect("family::fn");
        assert!(
            listed[0].ends_with(&format!("/{family}.rs")),
            "{name} is applied by {} but listed in {}",
            ty.handler(),
            listed[0]
        );
        let text = std::fs::read_to_string(&listed[0]).expect("read");
        assert!(
            text.contains(&format!("pub(crate) fn {function}(")),
            "{} does not define {function}",
            listed[0]
        );
        count += 1;
    }
    assert!(count >= 36, "only {count} actions");
}
