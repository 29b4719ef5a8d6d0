//! A compact byte-pair encoder for OpenAI's `o200k_base` and `cl100k_base` vocabularies,
//! exact to tiktoken's ordinary encoding (`counts_equal_tiktoken_rs` holds it), in a twelfth
//! of tiktoken-rs's memory.
//!
//! Why not tiktoken-rs's `CoreBPE`: it keeps every token three times as a heap `Vec<u8>`
//! (encoder, decoder, sorted list) and 2×128 clones of its regex, 46 MB for `o200k_base`,
//! most of an idle server's memory. Here a vocabulary is the embedded file itself (each
//! token's bytes in rank order, behind a length byte: `crates/core/vocab/`, written by
//! `scripts/vocab`), an offset per rank, and an open-addressed table of ranks keyed by the
//! token's bytes: ≈ 4.5 MB for `o200k_base`, built in a few tens of milliseconds.
//!
//! The algorithm is the usual one: split the text with the vocabulary's regex; a piece that
//! is a token is one token; otherwise merge its bytes pairwise, always the pair whose merged
//! bytes have the lowest rank first, until no merged pair is a token.

use fancy_regex::Regex;

/// Pieces longer than this (bytes) are merged with a heap instead of a scan per merge.
const LONG_PIECE: usize = 64;

/// One vocabulary, built once per process (see `TokenizerKind::encoder`).
pub struct Vocabulary {
    /// The embedded file: `len, bytes…` per token, in rank order.
    data: &'static [u8],
    /// `offsets[rank]`: where the token's bytes start in `data` (after its length byte).
    offsets: Vec<u32>,
    /// Open addressing, linear probing: a rank + 1 per slot, 0 for empty. Twice the
    /// vocabulary's size rounded up to a power of two, so probes stay short.
    table: Vec<u32>,
    mask: usize,
    pattern: Regex,
}

impl Vocabulary {
    /// Reads `data` (as written by `scripts/vocab`) and compiles `pattern`, the vocabulary's
    /// pre-tokenization regex. Panics on malformed data: it is embedded at build time and
    /// proven by the tests.
    pub fn new(data: &'static [u8], pattern: &str) -> Vocabulary {
        let mut offsets = Vec::new();
        let mut at = 0usize;
        while at < data.len() {
            let len = data[at] as usize;
            offsets.push((at + 1) as u32);
            at += 1 + len;
        }
        assert_eq!(at, data.len(), "a vocabulary file ends inside a token");
        let size = (offsets.len() * 2).next_power_of_two();
        let mut vocabulary = Vocabulary {
            data,
            offsets,
            table: vec![0; size],
            mask: size - 1,
            pattern: Regex::new(pattern).expect("the vocabulary's pattern compiles"),
        };
        for rank in 0..vocabulary.offsets.len() as u32 {
            let bytes = vocabulary.token(rank);
            let mut slot = hash(bytes) & vocabulary.mask;
            while vocabulary.table[slot] != 0 {
                slot = (slot + 1) & vocabulary.mask;
            }
            vocabulary.table[slot] = rank + 1;
        }
        vocabulary
    }

    /// The bytes of the token of `rank`.
    pub fn token(&self, rank: u32) -> &'static [u8] {
        let start = self.offsets[rank as usize] as usize;
        let len = self.data[start - 1] as usize;
        &self.data[start..start + len]
    }

    /// The rank of the token whose bytes are `bytes`, if there is one.
    fn rank(&self, bytes: &[u8]) -> Option<u32> {
        let mut slot = hash(bytes) & self.mask;
        loop {
            match self.table[slot] {
                0 => return None,
                stored => {
                    if self.token(stored - 1) == bytes {
                        return Some(stored - 1);
                    }
                }
            }
            slot = (slot + 1) & self.mask;
        }
    }

    /// The tokens of `text` (no special tokens: `<|endoftext|>` in a file is ordinary text).
    pub fn encode(&self, text: &str) -> Vec<u32> {
        let mut tokens = Vec::new();
        self.each_piece(text, |piece, merged| {
            tokens.extend(merged.windows(2).map(|w| {
                self.rank(&piece[w[0]..w[1]])
                    .expect("a merged part is a token")
            }))
        });
        tokens
    }

    /// How many tokens `encode(text)` has, without building them.
    pub fn count(&self, text: &str) -> usize {
        let mut count = 0;
        self.each_piece(text, |_, merged| count += merged.len() - 1);
        count
    }

    /// The byte length of the text `tokens` decode to.
    pub fn decoded_len(&self, tokens: &[u32]) -> usize {
        tokens
            .iter()
            .map(|&rank| {
                if (rank as usize) < self.offsets.len() {
                    self.token(rank).len()
                } else {
                    0
                }
            })
            .sum()
    }

    /// Calls `f(piece, boundaries)` for every regex piece of `text`, with the byte offsets
    /// that cut the piece into its tokens (first 0, last the piece's length).
    fn each_piece(&self, text: &str, mut f: impl FnMut(&[u8], &[usize])) {
        let mut boundaries = Vec::new();
        let mut ranks = Vec::new();
        for piece in self.pattern.find_iter(text) {
            // The pattern always matches here; an error is its backtrack limit, which
            // these patterns do not reach. Such a piece would be counted as its bytes.
            let piece = match piece {
                Ok(found) => found.as_str().as_bytes(),
                Err(_) => continue,
            };
            boundaries.clear();
            if self.rank(piece).is_some() {
                boundaries.extend([0, piece.len()]);
            } else {
                self.merge(piece, &mut boundaries, &mut ranks);
            }
            f(piece, &boundaries);
        }
    }

    /// Byte-pair merging of a piece that is not itself a token: the boundaries between its
    /// final tokens go to `boundaries`.
    fn merge(&self, piece: &[u8], boundaries: &mut Vec<usize>, ranks: &mut Vec<u32>) {
        if piece.len() > LONG_PIECE {
            return self.merge_long(piece, boundaries);
        }
        // boundaries[i] starts part i; ranks[i] is the rank of parts i and i+1 merged
        // (u32::MAX: not a token, or no next part).
        boundaries.extend(0..=piece.len());
        ranks.clear();
        ranks.extend((0..piece.len()).map(|i| self.pair_rank(piece, boundaries, i)));
        while let Some((at, &lowest)) = ranks.iter().enumerate().min_by_key(|(_, &r)| r) {
            if lowest == u32::MAX {
                break;
            }
            // Parts `at` and `at + 1` become one: the boundary between them goes, and the
            // pairs that now end or start at the new part are ranked again.
            boundaries.remove(at + 1);
            ranks.remove(at + 1);
            ranks[at] = self.pair_rank(piece, boundaries, at);
            if at > 0 {
                ranks[at - 1] = self.pair_rank(piece, boundaries, at - 1);
            }
        }
    }

    /// The same merges as `merge`, for a long piece (a minified line, a run of one
    /// character, a long identifier): a heap of the pairs' ranks and a linked list of the
    /// parts instead of a scan per merge, O(n log n) instead of O(n²). A part is named by
    /// the byte it starts at; ties go to the leftmost pair, as in the scan.
    fn merge_long(&self, piece: &[u8], boundaries: &mut Vec<usize>) {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let n = piece.len();
        // next[i]: the part after part i (n: none); prev[i]: the one before (usize::MAX).
        let mut next: Vec<usize> = (1..=n + 1).collect();
        let mut prev: Vec<usize> = (0..=n).map(|i| i.wrapping_sub(1)).collect();
        let mut alive = vec![true; n];
        let pair_rank = |next: &[usize], i: usize| -> u32 {
            let j = next[i];
            if j >= n {
                return u32::MAX;
            }
            self.rank(&piece[i..next[j].min(n)]).unwrap_or(u32::MAX)
        };
        let mut rank: Vec<u32> = (0..n).map(|i| pair_rank(&next, i)).collect();
        let mut heap: BinaryHeap<Reverse<(u32, usize)>> = rank
            .iter()
            .enumerate()
            .filter(|(_, &r)| r != u32::MAX)
            .map(|(i, &r)| Reverse((r, i)))
            .collect();
        while let Some(Reverse((r, i))) = heap.pop() {
            if !alive[i] || rank[i] != r {
                continue; // stale: the part merged away, or its pair changed since
            }
            // Part i swallows the part after it.
            let j = next[i];
            alive[j] = false;
            next[i] = next[j];
            if next[j] < n {
                prev[next[j]] = i;
            }
            rank[i] = pair_rank(&next, i);
            if rank[i] != u32::MAX {
                heap.push(Reverse((rank[i], i)));
            }
            let p = prev[i];
            if p != usize::MAX {
                rank[p] = pair_rank(&next, p);
                if rank[p] != u32::MAX {
                    heap.push(Reverse((rank[p], p)));
                }
            }
        }
        let mut at = 0;
        while at < n {
            boundaries.push(at);
            at = next[at];
        }
        boundaries.push(n);
    }

    /// The rank of parts `i` and `i + 1` merged, u32::MAX when there is no part `i + 1` or
    /// the merge is not a token.
    fn pair_rank(&self, piece: &[u8], boundaries: &[usize], i: usize) -> u32 {
        match boundaries.get(i + 2) {
            Some(&end) => self.rank(&piece[boundaries[i]..end]).unwrap_or(u32::MAX),
            None => u32::MAX,
        }
    }

    /// Memory held on the heap, for the benchmark's account.
    pub fn heap_bytes(&self) -> usize {
        self.offsets.capacity() * 4 + self.table.capacity() * 4
    }
}

/// A fast, well-mixed hash of a token's bytes (tokens are short: one to a few words).
fn hash(bytes: &[u8]) -> usize {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        h = (h ^ word).wrapping_mul(K).rotate_left(29);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = (h ^ u64::from_le_bytes(word))
            .wrapping_mul(K)
            .rotate_left(29);
    }
    (h ^ (h >> 32)) as usize
}
