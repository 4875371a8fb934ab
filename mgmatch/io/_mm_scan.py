"""The compiled line scan behind the Matrix Market reader's body check
(:func:`mgmatch.io.matrix_market._check_matrix_market_body`)."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["scan_lines", "scan_pieces", "NOT_WHOLE", "NOT_A_NUMBER"]

#: What :func:`scan_lines` found wrong with a field (or with a control byte where that field goes).
NOT_WHOLE, NOT_A_NUMBER = 1, 2


@njit(cache=True, nogil=True)
def _lower(b):
    return b + 32 if 65 <= b <= 90 else b


@njit(cache=True, nogil=True)
def _digits(buf, k, b):
    """The end of the run of decimal digits from ``k`` (before ``b``)."""
    while k < b and 48 <= buf[k] <= 57:
        k += 1
    return k


@njit(cache=True, nogil=True)
def _is_number(buf, a, b):
    """Whether ``buf[a:b]`` is a decimal number: an optional sign, digits with an optional point
    (or a point and digits), an optional exponent; or ``inf``, ``infinity`` or ``nan`` in any case
    (numbers to the parser, refused later as weights)."""
    k = a + 1 if a < b and (buf[a] == 43 or buf[a] == 45) else a
    n = b - k
    if n == 3 or n == 8:
        c0, c1, c2 = _lower(buf[k]), _lower(buf[k + 1]), _lower(buf[k + 2])
        if n == 3 and ((c0 == 110 and c1 == 97 and c2 == 110) or (c0 == 105 and c1 == 110 and c2 == 102)):
            return True  # nan, inf
        if n == 8 and c0 == 105 and c1 == 110 and c2 == 102:  # inf...
            rest = (105, 110, 105, 116, 121)  # ...inity
            ok = True
            for j in range(5):
                ok = ok and _lower(buf[k + 3 + j]) == rest[j]
            return ok
    e = _digits(buf, k, b)
    digits = e - k
    if e < b and buf[e] == 46:  # .
        f = _digits(buf, e + 1, b)
        digits += f - e - 1
        e = f
    if digits == 0:
        return False
    if e < b and (buf[e] == 101 or buf[e] == 69):  # e E
        k = e + 1
        if k < b and (buf[k] == 43 or buf[k] == 45):
            k += 1
        e = _digits(buf, k, b)
        if e == k:
            return False
    return e == b


# Byte classes: a solid byte of no other class, a digit, a sign, a point, an exponent mark, then
# the bytes that end a field: a blank (space, tab, CR), a line break, a control byte.
_OTHER, _DIGIT, _SIGN, _POINT, _EXP, _BLANK, _NEWLINE, _CONTROL = range(8)
_CLASS = np.zeros(256, dtype=np.uint8)
_CLASS[48:58] = _DIGIT
_CLASS[[43, 45]] = _SIGN
_CLASS[46] = _POINT
_CLASS[[69, 101]] = _EXP
_CLASS[[9, 13, 32]] = _BLANK
_CLASS[10] = _NEWLINE
_CLASS[[b for b in range(32) if b not in (9, 10, 13)] + [127]] = _CONTROL

# Field automata over the five solid classes; state 0 starts, -1 is dead. Whole numbers: an
# optional sign, digits (state 2 accepts). Decimal numbers: an optional sign, digits with an
# optional point or a point and digits, an optional exponent (states 2, 3, 5 and 8 accept).
_DEAD = -1
_WHOLE_STEP = np.full((3, 5), _DEAD, dtype=np.int8)
_WHOLE_STEP[0, _DIGIT] = _WHOLE_STEP[1, _DIGIT] = _WHOLE_STEP[2, _DIGIT] = 2
_WHOLE_STEP[0, _SIGN] = 1
_NUMBER_STEP = np.full((9, 5), _DEAD, dtype=np.int8)
for _state, _cls, _next in ((0, _SIGN, 1), (0, _DIGIT, 2), (0, _POINT, 4), (1, _DIGIT, 2), (1, _POINT, 4),
                            (2, _DIGIT, 2), (2, _POINT, 3), (2, _EXP, 6), (3, _DIGIT, 5), (3, _EXP, 6),
                            (4, _DIGIT, 5), (5, _DIGIT, 5), (5, _EXP, 6), (6, _SIGN, 7), (6, _DIGIT, 8),
                            (7, _DIGIT, 8), (8, _DIGIT, 8)):
    _NUMBER_STEP[_state, _cls] = _next
_NUMBER_ACCEPTS = np.zeros(9, dtype=np.bool_)
_NUMBER_ACCEPTS[[2, 3, 5, 8]] = True


@njit(cache=True, nogil=True)
def scan_lines(buf, ids, fields, numbers):
    """The first bad data line of ``buf`` (bytes of whole lines). A line is bad when it has
    other than ``fields`` fields (separated by spaces and tabs), when one of its first ``ids``
    fields is not a whole number, when a later one is not a number (``numbers``) or not a whole
    number (else), or when it holds a control byte (reported as that field's). Blank lines and
    comment lines (``%``) are skipped. Returns ``(where the line starts, its number of fields, the
    bad field's start and end, what is wrong with it, the line breaks before the bad line)``: ``-1``
    for the line when none is bad (and the line breaks of all ``buf``), and ``-1, -1, 0`` for the
    field when the count is what is wrong.

    One pass: each byte's class steps a field's automaton (whole or decimal number); a field the
    decimal automaton refuses is looked at again for ``inf``, ``infinity`` and ``nan``."""
    classes, whole_step, number_step, accepts = _CLASS, _WHOLE_STEP, _NUMBER_STEP, _NUMBER_ACCEPTS
    n = buf.shape[0]
    i = 0
    breaks = 0
    while i < n:
        start = i
        j = i
        while j < n and classes[buf[j]] == _BLANK:
            j += 1
        if j < n and buf[j] == 37:  # a comment
            while j < n and buf[j] != 10:
                j += 1
            breaks += j < n
            i = j + 1
            continue
        count = 0
        while j < n:
            c = classes[buf[j]]
            if c == _BLANK:
                j += 1
                continue
            if c == _NEWLINE:
                break
            if c == _CONTROL:
                return start, count, j, j + 1, NOT_WHOLE if count < ids or not numbers else NOT_A_NUMBER, breaks
            a = j
            count += 1
            state = 0
            if count <= ids or not numbers:
                while j < n:
                    c = classes[buf[j]]
                    if c >= _BLANK:
                        break
                    if state >= 0:
                        state = whole_step[state, c]
                    j += 1
                if state != 2:
                    return start, count, a, j, NOT_WHOLE, breaks
            else:
                while j < n:
                    c = classes[buf[j]]
                    if c >= _BLANK:
                        break
                    if state >= 0:
                        state = number_step[state, c]
                    j += 1
                if (state < 0 or not accepts[state]) and not _is_number(buf, a, j):
                    return start, count, a, j, NOT_A_NUMBER, breaks
        if count != 0 and count != fields:
            return start, count, -1, -1, 0, breaks
        breaks += j < n
        i = j + 1
    return -1, 0, -1, -1, 0, breaks


@njit(cache=True, nogil=True, parallel=True)
def scan_pieces(buf, cuts, ids, fields, numbers):
    """:func:`scan_lines` on the pieces ``buf[cuts[p]:cuts[p + 1]]`` (each of whole lines), one
    thread a piece. Row ``p`` of the result is what :func:`scan_lines` found in piece ``p``, its
    offsets made offsets in ``buf``: the first bad line of ``buf`` is that of the first row
    whose line is not ``-1``. Column 5 counts the piece's line breaks (before its bad line, if it
    has one)."""
    k = cuts.shape[0] - 1
    found = np.full((k, 6), -1, dtype=np.int64)
    for p in prange(k):
        a = cuts[p]
        at, count, t0, t1, wrong, breaks = scan_lines(buf[a:cuts[p + 1]], ids, fields, numbers)
        found[p, 5] = breaks
        if at >= 0:
            found[p, 0] = at + a
            found[p, 1] = count
            found[p, 2] = t0 + a if t0 >= 0 else -1
            found[p, 3] = t1 + a if t1 >= 0 else -1
            found[p, 4] = wrong
    return found
