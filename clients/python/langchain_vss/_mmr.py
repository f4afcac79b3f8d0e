"""Maximal marginal relevance on the client, for servers without the search's ``mmr`` field.
Pure Python (no numpy): the candidates are at most ``fetch_k`` short lists."""
from __future__ import annotations

import math
from typing import List, Sequence


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(x * x for x in b))
    if na == 0 or nb == 0:
        return 0.0
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


def mmr_order(query: Sequence[float], candidates: Sequence[Sequence[float]], k: int, lambda_mult: float) -> List[int]:
    """Indexes of up to ``k`` candidates: each pick maximises lambda·sim(query) − (1−lambda)·
    its highest similarity to a candidate picked before (LangChain's definition)."""
    relevance = [_cosine(query, c) for c in candidates]
    picked: List[int] = []
    closest = [-math.inf] * len(candidates)
    while len(picked) < min(k, len(candidates)):
        best, best_score = -1, -math.inf
        for i, rel in enumerate(relevance):
            if i in picked:
                continue
            redundancy = closest[i] if picked else 0.0
            score = lambda_mult * rel - (1 - lambda_mult) * redundancy
            if score > best_score:
                best, best_score = i, score
        picked.append(best)
        for i, c in enumerate(candidates):
            closest[i] = max(closest[i], _cosine(c, candidates[best]))
    return picked
