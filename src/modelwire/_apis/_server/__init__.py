"""The server side that every served wire API shares: the decoded request
(:mod:`.request`), typed field checks with field paths (:mod:`.fields`), and the
sealed origin of a turn carried through a client (:mod:`.origin`)."""
