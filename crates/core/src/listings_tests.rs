use super::*;

fn listing(path: &str, content: &str) -> Listing {
    Listing {
        path: path.into(),
        content: content.into(),
    }
}

#[test]
fn a_path_line_then_a_fenced_block_is_a_listing() {
    let reply = "Here is the solution.\n\ndiffie_hellman.py\n```python\nimport random\n\ndef private_key(p):\n    return random.randint(2, p - 1)\n```\n\nThis picks a key.";
    assert_eq!(
        find(reply),
        vec![listing(
            "diffie_hellman.py",
            "import random\n\ndef private_key(p):\n    return random.randint(2, p - 1)\n"
        )]
    );
}

#[test]
fn the_path_may_be_decorated_or_in_the_info_string() {
    for reply in [
        "`src/a.py`\n```\nx = 1\n```",
        "**src/a.py**\n\n```python\nx = 1\n```",
        "src/a.py:\n```python\nx = 1\n```",
        "### src/a.py\n```python\nx = 1\n```",
        "File: src/a.py\n~~~\nx = 1\n~~~",
        "Some text first.\n```python path=src/a.py\nx = 1\n```",
        "```python:src/a.py\nx = 1\n```",
    ] {
        assert_eq!(find(reply), vec![listing("src/a.py", "x = 1\n")], "{reply}");
    }
}

#[test]
fn a_block_without_a_path_or_after_prose_is_not_a_listing() {
    assert!(find("Run this:\n```bash\npytest -q\n```").is_empty());
    assert!(find("```python\nx = 1\n```").is_empty());
    assert!(find("See the docs at https://example.com/a.py\n```\nx\n```").is_empty());
    assert!(find("the file a.py\n```\nx\n```").is_empty());
}

#[test]
fn an_unclosed_block_is_never_a_listing() {
    // A reply cut by the output limit: half a file must not replace the whole.
    assert!(find("a.py\n```python\ndef f():\n    return 1\n").is_empty());
    // The first is closed, the second is not.
    assert_eq!(find("a.py\n```\nx = 1\n```\n\nb.py\n```\ny = ").len(), 1);
}

#[test]
fn a_listing_left_open_names_its_file() {
    assert_eq!(
        cut("a.py\n```\nx = 1\n```\nb.py\n```python\nwhile True:\n    x += 1\n"),
        Some("b.py".into())
    );
    assert_eq!(cut("a.py\n```\nx = 1\n```\n"), None);
    assert_eq!(cut("```bash\nrun"), None);
}

#[test]
fn several_listings_are_found_in_order() {
    let reply = "a.py\n```python\nx = 1\n```\nand\n\nlib/b.rs\n```rust\nfn b() {}\n```\n";
    assert_eq!(
        find(reply),
        vec![
            listing("a.py", "x = 1\n"),
            listing("lib/b.rs", "fn b() {}\n")
        ]
    );
}

#[test]
fn a_longer_fence_holds_a_shorter_one() {
    let reply = "README.md\n````markdown\n# Title\n```sh\nrun\n```\n````";
    assert_eq!(
        find(reply),
        vec![listing("README.md", "# Title\n```sh\nrun\n```\n")]
    );
}

#[test]
fn read_line_numbers_copied_into_every_line_are_left_out() {
    let reply = "a.py\n```python\nL1: def f():\nL2:     return 1\n\nL4: x = f()\n```";
    assert_eq!(
        find(reply),
        vec![listing("a.py", "def f():\n    return 1\n\nx = f()\n")]
    );
    // Only some lines numbered: the text is the file's own.
    let mixed = "a.py\n```\nL1: x\ny\n```";
    assert_eq!(find(mixed), vec![listing("a.py", "L1: x\ny\n")]);
}

#[test]
fn an_empty_block_is_an_empty_file() {
    assert_eq!(find("a.py\n```\n```"), vec![listing("a.py", "")]);
}

#[test]
fn a_block_under_no_path_is_a_block_and_names_no_file() {
    let reply = "Here it is:\n```python\ndef f():\n    return 1\n```\nb.py\n```\nx = 2\n```\n";
    assert_eq!(
        blocks(reply),
        vec![
            Block {
                path: None,
                content: "def f():\n    return 1\n".into()
            },
            Block {
                path: Some("b.py".into()),
                content: "x = 2\n".into()
            },
        ]
    );
    assert_eq!(find(reply), vec![listing("b.py", "x = 2\n")]);
}

#[test]
fn a_block_that_defines_the_file_s_names_is_a_new_version_of_it() {
    let stub = "def simulate_game(player_a, player_b):\n    pass\n\nclass Deck:\n    pass\n";
    let whole = "import itertools\n\nclass Deck:\n    cards = []\n\ndef simulate_game(a, b):\n    return {}\n";
    assert!(keeps_definitions(whole, stub));
    // A snippet that calls the function, or one that drops a name, is not the file.
    assert!(!keeps_definitions("print(simulate_game([], []))\n", stub));
    assert!(!keeps_definitions(
        "def simulate_game(a, b):\n    return {}\n",
        stub
    ));
    // A file that defines nothing at its top level has no version to recognize.
    assert!(!keeps_definitions("x = 1\n", "x = 0\n"));
    assert!(keeps_definitions(
        "pub fn run() {}\n",
        "pub fn run() {\n    todo!()\n}\n"
    ));
}
