//! The open documents, owned by one worker thread that applies every text-sync
//! notification in the order the client sent it.
//!
//! Why a worker: tower-lsp runs handlers concurrently (tower-lsp issue #284), so two
//! didChange handlers may run out of order. The LSP adapter instead hands each sync
//! notification to [`DocumentStore`] synchronously, in the transport's read order, and this
//! thread applies them one by one. Edits travel in batches (see `BATCH`); reads
//! (`snapshot`) travel the same queue behind the batch waiting, so a request sees every
//! change the client sent before it. Parsing is CPU work and stays off the async runtime; a
//! change does not parse at all (the next read reparses what changed).

use crate::locks::Locked;
use agentls_core::document::{Document, DocumentSnapshot, TextChange, DEFAULT_MAX_SYNTAX_BYTES};
use agentls_core::language::Language;
use agentls_core::position::PositionEncoding;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{mpsc, Arc, Mutex};
use tokio::sync::oneshot;
use tower_lsp::lsp_types::Url;

enum Command {
    Configure {
        encoding: PositionEncoding,
        max_syntax_bytes: usize,
        tree_budget_bytes: usize,
    },
    Open {
        uri: Url,
        language_id: String,
        version: i32,
        text: String,
    },
    Change {
        uri: Url,
        version: i32,
        changes: Vec<TextChange>,
    },
    Close {
        uri: Url,
    },
    Snapshot {
        uri: Url,
        reply: oneshot::Sender<Option<DocumentSnapshot>>,
    },
    /// Snapshots of the open documents whose uri passes the filter.
    Matching {
        filter: fn(&Url) -> bool,
        reply: oneshot::Sender<Vec<(Url, DocumentSnapshot)>>,
    },
}

/// Edits read from the client are handed to the worker in batches of at most this many
/// commands: one wake-up of the worker per batch instead of one per keystroke. A batch is
/// sent when it is full, or by any other command (a read, a configuration), which sends the
/// batch waiting before it, so every read sees every edit sent before it. It is not sent
/// when the reader runs out of input: waking the worker for each keystroke of a burst cost
/// more CPU than the keystroke itself, and nothing but a read looks at the documents (a
/// read then applies at most a batch of edits first, about a microsecond each).
const BATCH: usize = 64;

/// Batches waiting for the worker at most (so at most `QUEUE_BOUND * BATCH` + `BATCH`
/// commands wait in all). A flood of edits (a client replaying a huge undo history) then
/// waits at the sender, which stops reading stdin: back-pressure instead of memory without
/// bound. Each change costs the worker a few microseconds (no parse), so a full queue drains
/// in well under a second.
const QUEUE_BOUND: usize = 64;

/// A cheap, cloneable handle to the document worker.
#[derive(Clone)]
pub struct DocumentStore {
    batches: mpsc::SyncSender<Vec<Command>>,
    /// Sync notifications not yet handed to the worker (see `BATCH`).
    waiting: Arc<Mutex<Vec<Command>>>,
}

impl DocumentStore {
    /// Starts the worker thread. It ends when the last handle is dropped.
    pub fn spawn() -> DocumentStore {
        let (batches, queue) = mpsc::sync_channel(QUEUE_BOUND);
        let worker = std::thread::Builder::new()
            .name("agentls-documents".into())
            .spawn(move || Worker::new().run(queue));
        if let Err(err) = worker {
            // Without a thread there is no document state; every read will answer None.
            tracing::error!("cannot start the document worker: {err}");
        }
        DocumentStore {
            batches,
            waiting: Arc::new(Mutex::new(Vec::with_capacity(BATCH))),
        }
    }

    /// Sends the waiting batch with `command` at its end, now.
    fn send(&self, command: Command) {
        let mut waiting = self.waiting.locked();
        waiting.push(command);
        self.send_waiting(&mut waiting);
    }

    /// Adds an edit to the waiting batch; sends the batch once it is full.
    fn queue(&self, command: Command) {
        let mut waiting = self.waiting.locked();
        waiting.push(command);
        if waiting.len() >= BATCH {
            self.send_waiting(&mut waiting);
        }
    }

    /// Hands the waiting edits to the worker now.
    pub fn flush(&self) {
        let mut waiting = self.waiting.locked();
        if !waiting.is_empty() {
            self.send_waiting(&mut waiting);
        }
    }

    /// Sends with the lock held, so that batches reach the worker in the order they were
    /// made.
    fn send_waiting(&self, waiting: &mut Vec<Command>) {
        let batch = std::mem::replace(waiting, Vec::with_capacity(BATCH));
        if self.batches.send(batch).is_err() {
            tracing::error!("the document worker is gone; document commands were dropped");
        }
    }

    pub fn configure(
        &self,
        encoding: PositionEncoding,
        max_syntax_bytes: usize,
        tree_budget_bytes: usize,
    ) {
        self.send(Command::Configure {
            encoding,
            max_syntax_bytes,
            tree_budget_bytes,
        });
    }

    pub fn open(&self, uri: Url, language_id: String, version: i32, text: String) {
        self.queue(Command::Open {
            uri,
            language_id,
            version,
            text,
        });
    }

    pub fn change(&self, uri: Url, version: i32, changes: Vec<TextChange>) {
        self.queue(Command::Change {
            uri,
            version,
            changes,
        });
    }

    pub fn close(&self, uri: Url) {
        self.queue(Command::Close { uri });
    }

    /// The document as of every sync notification queued before this call.
    pub async fn snapshot(&self, uri: &Url) -> Option<DocumentSnapshot> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Snapshot {
            uri: uri.clone(),
            reply,
        });
        answer.await.ok().flatten()
    }

    pub async fn matching(&self, filter: fn(&Url) -> bool) -> Vec<(Url, DocumentSnapshot)> {
        let (reply, answer) = oneshot::channel();
        self.send(Command::Matching { filter, reply });
        answer.await.unwrap_or_default()
    }
}

struct Worker {
    documents: HashMap<Url, Document>,
    encoding: PositionEncoding,
    max_syntax_bytes: usize,
    /// Trees are kept for the most recently used documents up to this much text.
    tree_budget_bytes: usize,
    /// When each document was last opened, changed or read (a counter, not a clock).
    last_used: HashMap<Url, u64>,
    tick: u64,
}

impl Worker {
    fn new() -> Self {
        Worker {
            documents: HashMap::new(),
            encoding: PositionEncoding::default(),
            max_syntax_bytes: DEFAULT_MAX_SYNTAX_BYTES,
            tree_budget_bytes: agentls_core::document::DEFAULT_TREE_BUDGET_BYTES,
            last_used: HashMap::new(),
            tick: 0,
        }
    }

    fn touch(&mut self, uri: &Url) {
        self.tick += 1;
        match self.last_used.get_mut(uri) {
            Some(used) => *used = self.tick,
            None => {
                self.last_used.insert(uri.clone(), self.tick);
            }
        }
    }

    /// Whether `evict_trees` could drop anything: only when the documents that keep a tree
    /// are over the budget together (and more than one keeps a tree). Checked on every edit
    /// without allocating.
    fn over_tree_budget(&self) -> bool {
        let (mut count, mut bytes) = (0, 0);
        for doc in self.documents.values().filter(|doc| doc.holds_tree()) {
            count += 1;
            bytes += doc.rope().len_bytes();
        }
        count > 1 && bytes > self.tree_budget_bytes
    }

    /// Drops the trees of the least recently used documents until the documents that keep
    /// one fit the budget (the most recent always keeps its tree).
    fn evict_trees(&mut self) {
        let mut with_trees: Vec<(u64, Url, usize)> = self
            .documents
            .iter()
            .filter(|(_, doc)| doc.holds_tree())
            .map(|(uri, doc)| {
                (
                    self.last_used.get(uri).copied().unwrap_or(0),
                    uri.clone(),
                    doc.rope().len_bytes(),
                )
            })
            .collect();
        // Newest first: keep while the budget lasts.
        with_trees.sort_by_key(|(used, _, _)| std::cmp::Reverse(*used));
        let mut kept = 0;
        for (index, (_, uri, bytes)) in with_trees.into_iter().enumerate() {
            if index == 0 || kept + bytes <= self.tree_budget_bytes {
                kept += bytes;
            } else if let Some(doc) = self.documents.get_mut(&uri) {
                doc.drop_tree();
            }
        }
    }

    fn run(mut self, queue: mpsc::Receiver<Vec<Command>>) {
        while let Ok(batch) = queue.recv() {
            for command in batch {
                self.run_one(command);
            }
        }
    }

    fn run_one(&mut self, command: Command) {
        let uri = match &command {
            Command::Open { uri, .. }
            | Command::Change { uri, .. }
            | Command::Close { uri }
            | Command::Snapshot { uri, .. } => Some(uri.clone()),
            _ => None,
        };
        // A bug in one document must not take the others down with it.
        if catch_unwind(AssertUnwindSafe(|| self.handle(command))).is_err() {
            tracing::error!("document worker panicked on {uri:?}; dropping that document");
            if let Some(uri) = uri {
                self.documents.remove(&uri);
            }
        }
    }

    fn open(&mut self, uri: Url, language_id: &str, version: i32, text: &str) {
        let path = uri.to_file_path().ok();
        let language = Language::detect(language_id, path.as_deref());
        if self.documents.contains_key(&uri) {
            tracing::warn!("didOpen of {uri}, which is already open: replacing it");
        }
        let document = Document::new(text, version, language, self.max_syntax_bytes);
        self.touch(&uri);
        self.documents.insert(uri, document);
        self.evict_trees();
    }

    /// A didChange, applied whole or not at all.
    fn change(&mut self, uri: &Url, version: i32, changes: &[TextChange]) {
        let Some(document) = self.documents.get_mut(uri) else {
            tracing::warn!("didChange for {uri}, which is not open: ignored");
            return;
        };
        if version <= document.version {
            tracing::warn!(
                "didChange for {uri} with version {version}, not newer than {}: ignored",
                document.version
            );
            return;
        }
        // No parse here: the next read reparses what changed (document.rs).
        match document.apply_changes(changes, self.encoding) {
            Ok(()) => document.version = version,
            Err(err) => {
                tracing::warn!("didChange for {uri} (version {version}) ignored: {err}")
            }
        }
        self.touch(uri);
        if self.over_tree_budget() {
            self.evict_trees();
        }
    }

    fn handle(&mut self, command: Command) {
        match command {
            Command::Configure {
                encoding,
                max_syntax_bytes,
                tree_budget_bytes,
            } => {
                self.encoding = encoding;
                self.max_syntax_bytes = max_syntax_bytes;
                self.tree_budget_bytes = tree_budget_bytes;
                self.evict_trees();
            }
            Command::Open {
                uri,
                language_id,
                version,
                text,
            } => self.open(uri, &language_id, version, &text),
            Command::Change {
                uri,
                version,
                changes,
            } => self.change(&uri, version, &changes),
            Command::Close { uri } => {
                self.last_used.remove(&uri);
                if self.documents.remove(&uri).is_none() {
                    tracing::warn!("didClose for {uri}, which is not open: ignored");
                }
            }
            Command::Snapshot { uri, reply } => {
                // The document asked for by name is the one in use: it gets its tree.
                let snapshot = self.documents.get_mut(&uri).map(Document::snapshot);
                if snapshot.is_some() {
                    self.touch(&uri);
                    self.evict_trees();
                }
                let _ = reply.send(snapshot);
            }
            Command::Matching { filter, reply } => {
                let found = self
                    .documents
                    .iter_mut()
                    .filter(|(uri, _)| filter(uri))
                    .map(|(uri, doc)| (uri.clone(), doc.snapshot_if_parsed()))
                    .collect();
                let _ = reply.send(found);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower_lsp::lsp_types::{Position, Range};

    fn uri(name: &str) -> Url {
        Url::parse(&format!("file:///ws/{name}")).unwrap()
    }

    fn insert_at(line: u32, col: u32, text: &str) -> Vec<TextChange> {
        let p = Position::new(line, col);
        vec![TextChange {
            range: Some(Range::new(p, p)),
            text: text.into(),
        }]
    }

    async fn text(store: &DocumentStore, name: &str) -> Option<(String, i32)> {
        store
            .snapshot(&uri(name))
            .await
            .map(|s| (s.rope.to_string(), s.version))
    }

    #[tokio::test]
    async fn changes_apply_in_order_and_reads_see_them() {
        let store = DocumentStore::spawn();
        store.open(uri("a.rs"), "rust".into(), 1, String::new());
        for (i, ch) in "hello".chars().enumerate() {
            store.change(
                uri("a.rs"),
                2 + i as i32,
                insert_at(0, i as u32, &ch.to_string()),
            );
        }
        assert_eq!(text(&store, "a.rs").await, Some(("hello".into(), 6)));
    }

    #[tokio::test]
    async fn edits_go_in_batches_and_every_read_sees_the_ones_before_it() {
        let store = DocumentStore::spawn();
        store.open(uri("a.rs"), "rust".into(), 1, String::new());
        // Several full batches and a part of one, still waiting when the read comes.
        let edits = 3 * BATCH + 5;
        for i in 0..edits {
            store.change(uri("a.rs"), 2 + i as i32, insert_at(0, i as u32, "x"));
        }
        assert!(!store.waiting.lock().unwrap().is_empty());
        let expected = ("x".repeat(edits), 1 + edits as i32);
        assert_eq!(text(&store, "a.rs").await, Some(expected));
        assert!(store.waiting.lock().unwrap().is_empty());
        // A flush hands them over without a read.
        store.change(uri("a.rs"), 2 + edits as i32, insert_at(0, 0, "y"));
        store.flush();
        assert!(store.waiting.lock().unwrap().is_empty());
        let (text, _) = text(&store, "a.rs").await.unwrap();
        assert!(text.starts_with("yx"));
    }

    #[tokio::test]
    async fn stale_versions_and_unknown_documents_are_ignored() {
        let store = DocumentStore::spawn();
        store.open(uri("a.rs"), "rust".into(), 5, "x".into());
        store.change(uri("a.rs"), 5, insert_at(0, 0, "stale"));
        store.change(uri("a.rs"), 3, insert_at(0, 0, "older"));
        store.change(uri("b.rs"), 9, insert_at(0, 0, "unknown"));
        store.change(uri("a.rs"), 7, insert_at(4, 0, "bad line"));
        assert_eq!(text(&store, "a.rs").await, Some(("x".into(), 5)));
        assert_eq!(text(&store, "b.rs").await, None);
        // Versions may skip (Neovim sends changedtick).
        store.change(uri("a.rs"), 9, insert_at(0, 1, "y"));
        assert_eq!(text(&store, "a.rs").await, Some(("xy".into(), 9)));
    }

    #[tokio::test]
    async fn close_forgets_and_matching_filters() {
        let store = DocumentStore::spawn();
        store.open(uri("AGENTS.md"), "markdown".into(), 1, "rules".into());
        store.open(uri("main.go"), "go".into(), 1, "package main".into());
        let found = store.matching(|u| u.path().ends_with("AGENTS.md")).await;
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].1.rope.to_string(), "rules");
        store.close(uri("AGENTS.md"));
        store.close(uri("AGENTS.md"));
        assert!(store.matching(|_| true).await.len() == 1);
        assert_eq!(
            store.snapshot(&uri("main.go")).await.unwrap().language,
            Language::Go
        );
    }

    #[tokio::test]
    async fn only_the_most_recently_used_documents_keep_their_trees() {
        let store = DocumentStore::spawn();
        // Room for the trees of two of these documents.
        store.configure(PositionEncoding::Utf16, DEFAULT_MAX_SYNTAX_BYTES, 25);
        for name in ["a.rs", "b.rs", "c.rs"] {
            store.open(uri(name), "rust".into(), 1, "fn f() {}\n".into());
        }
        let has_tree = |found: &[(Url, DocumentSnapshot)], name: &str| {
            found
                .iter()
                .find(|(u, _)| u.path().ends_with(name))
                .map(|(_, s)| s.tree.is_some())
                .unwrap()
        };
        let found = store.matching(|_| true).await;
        assert!(!has_tree(&found, "a.rs"), "the oldest lost its tree");
        assert!(has_tree(&found, "b.rs") && has_tree(&found, "c.rs"));
        // Asked for by name it is parsed again, and the next oldest gives way.
        let a = store.snapshot(&uri("a.rs")).await.unwrap();
        assert_eq!(a.tree.unwrap().root_node().kind(), "source_file");
        let found = store.matching(|_| true).await;
        assert!(has_tree(&found, "a.rs") && !has_tree(&found, "b.rs"));
        // An edit of a document without a tree parses it whole, correctly.
        store.change(uri("b.rs"), 2, insert_at(0, 0, "// x\n"));
        let b = store.snapshot(&uri("b.rs")).await.unwrap();
        assert_eq!(b.rope.to_string(), "// x\nfn f() {}\n");
        assert_eq!(b.tree.unwrap().root_node().named_child_count(), 2);
    }
}
