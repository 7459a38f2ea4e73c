"""The loaded lexical index: the term vocabulary and, over the segments minus their tombstones, BM25's
statistics (document frequencies, average length, length norms) and the maps from a paper's position to its
slot in the segments.

``rag.index.lexical`` keeps the segments on disk and in sync with the store; what it has loaded is one of
these views, which its scoring and filters read.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from rag.index.segments import Segment


class Vocabulary:
    """Term → global id; ids only grow between full merges. Saved as append-only JSON files of new terms."""

    def __init__(self) -> None:
        self.terms: list[str] = []
        self.ids: dict[str, int] = {}

    def copy(self) -> Vocabulary:
        out = Vocabulary()
        out.terms, out.ids = list(self.terms), dict(self.ids)
        return out

    def extend(self, terms: Iterable[str]) -> None:
        for t in terms:
            self.ids[t] = len(self.terms)
            self.terms.append(t)

    def encode(self, words: list[str], new: list[str]) -> np.ndarray:
        """Ids of ``words``, adding unknown ones (also appended to ``new``)."""
        out = np.empty(len(words), dtype=np.int32)
        for i, w in enumerate(words):
            tid = self.ids.get(w)
            if tid is None:
                tid = self.ids[w] = len(self.terms)
                self.terms.append(w)
                new.append(w)
            out[i] = tid
        return out


class IndexView:
    """The loaded index: segments, tombstones and the statistics and position maps derived from them.

    Positions (what ``term_scores`` indexes, what filters return) number the live papers sorted by id;
    slots number every doc of every segment, tombstoned ones included."""

    def __init__(self, segments: list[Segment], deleted: dict[str, set[int]], vocab: Vocabulary,
                 k1: float, b: float) -> None:
        self.segments, self.deleted, self.vocab, self.k1, self.b = segments, deleted, vocab, k1, b
        self.offsets = np.cumsum([0] + [s.n for s in segments]).astype(np.int64)
        n_slots = int(self.offsets[-1])
        live = np.ones(n_slots, dtype=bool)
        for i, seg in enumerate(segments):
            gone = deleted.get(seg.name)
            if gone:
                live[self.offsets[i] + np.fromiter(gone, dtype=np.int64, count=len(gone))] = False
        slot_pids = [p for s in segments for p in s.pids]
        live_slots = np.flatnonzero(live)
        order = sorted(live_slots.tolist(), key=slot_pids.__getitem__)
        self.view = np.array(order, dtype=np.int64)  # position → slot
        self.paper_ids: list[str] = [slot_pids[s] for s in order]
        self.slot_to_pos = np.full(n_slots, -1, dtype=np.int64)
        self.slot_to_pos[self.view] = np.arange(len(self.view))
        self.pos: dict[str, int] = {p: i for i, p in enumerate(self.paper_ids)}
        self.n = len(self.view)
        lengths = np.concatenate([np.asarray(s.lengths, dtype=np.int64) for s in segments]) if segments else \
            np.zeros(0, np.int64)
        years = np.concatenate([np.asarray(s.years) for s in segments]) if segments else np.zeros(0, np.int32)
        self.years = years[self.view] if self.n else np.zeros(0, np.int32)
        total = int(lengths[live].sum())
        self.avgdl = total / self.n if self.n else 1.0
        self.norms = [k1 * (1 - b + b * np.asarray(s.lengths, dtype=np.float64) / self.avgdl) for s in segments]
        df = np.zeros(len(vocab.terms), dtype=np.int64)
        for seg in segments:
            t, c = seg.df()
            df[t] += c  # a segment lists each term once
            gone = deleted.get(seg.name)
            if gone:
                dead = np.concatenate([np.unique(seg.forward(i)) for i in gone])
                np.subtract.at(df, dead, 1)
        self.df = df

    def idf(self, tid: int) -> float:
        d = int(self.df[tid]) if tid < len(self.df) else 0
        return float(np.log1p((self.n - d + 0.5) / (d + 0.5))) if d else 0.0

    def key(self, pos: int) -> str:
        """The version key (``paper_id#content_hash``) of the paper at position ``pos``, read from its segment."""
        slot = int(self.view[pos])
        seg = int(np.searchsorted(self.offsets, slot, side="right")) - 1
        return self.segments[seg].keys[slot - int(self.offsets[seg])]

    def slots_to_positions(self, seg_index: int, local: np.ndarray) -> np.ndarray:
        pos = self.slot_to_pos[self.offsets[seg_index] + local.astype(np.int64)]
        return pos[pos >= 0]
