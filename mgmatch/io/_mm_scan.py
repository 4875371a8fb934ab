"""The compiled line scan behind the Matrix Market reader's field checks
(:func:`mgmatch.io.readers._check_matrix_market_lines`)."""

from __future__ import annotations

from numba import njit

__all__ = ["scan_lines"]


@njit(cache=True, nogil=True)
def _blank(b):
    return b == 32 or b == 9 or b == 13 or b == 11 or b == 12  # space, tab, CR, VT, FF


@njit(cache=True, nogil=True)
def _lower(b):
    return b + 32 if 65 <= b <= 90 else b


@njit(cache=True, nogil=True)
def _is_number(buf, a, b):
    """Whether ``buf[a:b]`` is a decimal number: an optional sign, digits with an optional point
    (or a point and digits), an optional exponent; or ``inf``, ``infinity`` or ``nan`` in any case
    (numbers to the parser, refused later as weights)."""
    k = a
    if k < b and (buf[k] == 43 or buf[k] == 45):  # + -
        k += 1
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
    digits = 0
    while k < b and 48 <= buf[k] <= 57:
        k += 1
        digits += 1
    if k < b and buf[k] == 46:  # .
        k += 1
        while k < b and 48 <= buf[k] <= 57:
            k += 1
            digits += 1
    if digits == 0:
        return False
    if k < b and (buf[k] == 101 or buf[k] == 69):  # e E
        k += 1
        if k < b and (buf[k] == 43 or buf[k] == 45):
            k += 1
        e = 0
        while k < b and 48 <= buf[k] <= 57:
            k += 1
            e += 1
        if e == 0:
            return False
    return k == b


@njit(cache=True, nogil=True)
def scan_lines(buf, ids, fields, numbers):
    """The first data line of ``buf`` (bytes of whole lines) with other than ``fields``
    whitespace-separated fields, or, with ``numbers``, whose field past the first ``ids`` is not a
    number. Blank lines and comment lines (``%``) are skipped. Returns ``(where the line starts,
    its number of fields, the bad field's start and end)``: ``-1`` for the line when none is bad,
    and for the field when the count is what is wrong."""
    n = buf.shape[0]
    i = 0
    while i < n:
        start = i
        j = i
        while j < n and _blank(buf[j]):
            j += 1
        if j < n and buf[j] == 37:  # a comment
            while j < n and buf[j] != 10:
                j += 1
            i = j + 1
            continue
        count = 0
        while j < n and buf[j] != 10:
            if _blank(buf[j]):
                j += 1
                continue
            a = j
            while j < n and buf[j] != 10 and not _blank(buf[j]):
                j += 1
            count += 1
            if numbers and ids < count <= fields and not _is_number(buf, a, j):
                return start, count, a, j
        if count != 0 and count != fields:
            return start, count, -1, -1
        i = j + 1
    return -1, 0, -1, -1
