"""The lecture-hall recipe (scripts/hall.py, `loadtest.py --scenario class`) measures what it says:
each simple client opens its page (the lesson or the explorer), finds the sentence box, and each
answer it times is its own sentence analysed (its words in the run's token list), on a real
server; a client whose sentence is not shown is a failure, not a fast answer."""

from __future__ import annotations

import pytest

from scripts import hall


@pytest.mark.slow
def test_a_small_class_opens_its_pages_and_each_answer_is_its_own_sentence() -> None:
    report = hall.hall(3, ramp=1.0, seconds=14.0, env={"ATTNVIZ_DEMO": "1"}, think=(2.0, 3.0))
    assert report.failures == []
    assert len(report.opens) == 3
    assert len(report.answers) >= 6  # at least two sentences each in 14 s at one every 2-3 s
    assert report.peak_rss_mb >= report.start_rss_mb > 0


def test_the_answer_check_reads_the_students_own_tokens() -> None:
    from streamlit.proto.Delta_pb2 import Delta

    shown = Delta()
    shown.new_element.markdown.body = "`[CLS]` · `student` · `7` · `round` · `2` · `saw` · `[SEP]`"
    assert hall._shows([shown], 7, 2)
    assert not hall._shows([shown], 7, 3) and not hall._shows([shown], 17, 2)
