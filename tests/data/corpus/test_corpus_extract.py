"""Tests of the corpus extraction (data/corpus/*.py) on small hand-made inputs.

Run: python3 -m unittest discover -s tests/data/corpus (ctest: data.corpus_extract).
"""

import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

CORPUS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "data", "corpus")
sys.path.insert(0, CORPUS_DIR)

from dictd_files import b64_number, read_entries  # noqa: E402
from html_text import paragraphs_from_html  # noqa: E402
from pod_text import pod_paragraphs  # noqa: E402
from sword_modules import osis_paragraphs, read_blocks  # noqa: E402
from text_cleaning import dedupe_key, keep_paragraph, paragraphs_from_text  # noqa: E402

PROSE = "The quick brown fox jumps over the lazy dog near the river bank."


class TextCleaning(unittest.TestCase):
    def test_paragraphs_are_unwrapped_at_blank_lines(self):
        text = "  First line\n   wrapped here.\n\n\n Second\tparagraph \u00a0 ends.\r\n \n"
        self.assertEqual(paragraphs_from_text(text), ["First line wrapped here.", "Second paragraph ends."])

    def test_prose_is_kept_and_code_is_not(self):
        self.assertTrue(keep_paragraph(PROSE))
        self.assertTrue(keep_paragraph("He said: \"Don't go there, it's 5 miles away.\""))
        for not_prose in ["for (int i = 0; i < n; ++i) { x[i] = y[i] * 2; }",
                          "if x == 1: return self.value",
                          ">>> import os and then call it",
                          "Contents",
                          "a b",
                          "$HOME/.config/app/settings.json /usr/lib/x86_64-linux-gnu",
                          "1990 1991 1992 1993 1994 1995 1996"]:
            self.assertFalse(keep_paragraph(not_prose), not_prose)

    def test_dedupe_key_ignores_case_space_and_punctuation(self):
        self.assertEqual(dedupe_key("Hello, World!"), dedupe_key("hello world"))
        self.assertNotEqual(dedupe_key("hello world"), dedupe_key("hello word"))


class HtmlText(unittest.TestCase):
    def test_content_without_navigation_code_or_scripts(self):
        page = """<html><head><title>T</title><script>var x = 1;</script></head><body>
          <div class="sphinxsidebar"><p>Navigation sidebar text here</p></div>
          <h1>A Heading<a class="headerlink" href="#">¶</a></h1>
          <p>First <em>paragraph</em> with
             a line break &amp; an entity.</p>
          <pre>int main() { return 0; }</pre>
          <ul><li>Item one<li>Item two</ul>
          <div class="footer"><p>Copyright footer</p></div>
        </body></html>"""
        self.assertEqual(paragraphs_from_html(page),
                         ["A Heading", "First paragraph with a line break & an entity.", "Item one", "Item two"])


def write_module(directory, testament, blocks, ext=("bzs", "bzz")):
    """A zText module with the given block texts (the verse index is not read)."""
    index, data = b"", b""
    for text in blocks:
        packed = zlib.compress(text.encode("utf-8"))
        index += struct.pack("<III", len(data), len(packed), len(text.encode("utf-8")))
        data += packed
    with open(os.path.join(directory, f"{testament}.{ext[0]}"), "wb") as f:
        f.write(index)
    with open(os.path.join(directory, f"{testament}.{ext[1]}"), "wb") as f:
        f.write(data)


class SwordModules(unittest.TestCase):
    def test_blocks_in_order_old_testament_first(self):
        with tempfile.TemporaryDirectory() as d:
            write_module(d, "nt", ["<p>New one</p>"])
            write_module(d, "ot", ["<p>Old one</p>", "<p>Old two</p>"])
            self.assertEqual([(t, n, text) for t, n, text in read_blocks(d)],
                             [("ot", 0, "<p>Old one</p>"), ("ot", 1, "<p>Old two</p>"), ("nt", 0, "<p>New one</p>")])

    def test_truncated_data_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as d:
            write_module(d, "ot", ["<p>some text that compresses</p>"])
            path = os.path.join(d, "ot.bzz")
            with open(path, "rb") as f:
                data = f.read()
            with open(path, "wb") as f:
                f.write(data[:-3])
            with self.assertRaisesRegex(ValueError, r"ot.bzs: block 0 ends at byte \d+, past the end"):
                list(read_blocks(d))

    def test_osis_notes_dropped_and_breaks_at_chapters(self):
        osis = ('<chapter n="1" sID="Gen.1"/> In the <w lemma="strong:H7225">beginning</w>'
                '<note type="study">a note <i>nested</i></note> God created. '
                '<chapter n="2" sID="Gen.2"/> Thus the heavens &amp; the earth.')
        self.assertEqual(osis_paragraphs(osis), ["In the beginning God created.", "Thus the heavens & the earth."])


class DictdFiles(unittest.TestCase):
    def test_base64_numbers(self):
        self.assertEqual(b64_number("A"), 0)
        self.assertEqual(b64_number("z"), 51)
        self.assertEqual(b64_number("BA"), 64)
        self.assertEqual(b64_number("Ba"), 90)

    def test_entries_once_in_file_order_without_database_info(self):
        def b64(n):
            digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
            out = ""
            while True:
                out = digits[n % 64] + out
                n //= 64
                if n == 0:
                    return out
        body = "00-database-info\nabout\n" + "Apple\nA fruit.\n" + "Banana\nAnother fruit.\n"
        with tempfile.TemporaryDirectory() as d:
            with gzip.open(os.path.join(d, "x.dict.dz"), "wt") as f:
                f.write(body)
            spans = {"00-database-info": (0, 23), "apple": (23, 15), "pomme": (23, 15), "banana": (38, 22)}
            with open(os.path.join(d, "x.index"), "w") as f:
                for word, (offset, length) in sorted(spans.items(), key=lambda kv: kv[0]):
                    f.write(f"{word}\t{b64(offset)}\t{b64(length)}\n")
            entries = list(read_entries(os.path.join(d, "x.index"), os.path.join(d, "x.dict.dz")))
        self.assertEqual(entries, ["Apple\nA fruit.\n", "Banana\nAnother fruit.\n"])


class PodText(unittest.TestCase):
    def test_codes_resolved_code_and_directives_dropped(self):
        pod = ("=head1 NAME\n\nperlfoo - B<bold> and I<italic C<nested>> text\n\n"
               "    my $x = 1;  # verbatim\n\n=over 4\n\n=item *\n\nL<the manual|perlfunc> says E<lt>hiE<gt>.\n\n"
               "=begin html\n\n<p>raw</p>\n\n=end html\n\n=cut\n")
        self.assertEqual(pod_paragraphs(pod),
                         ["NAME", "perlfoo - bold and italic nested text", "the manual says <hi>."])


class ExtractCorpus(unittest.TestCase):
    """The whole extraction on a fake unpacked root with two plain-text sources."""

    def make_root(self, root):
        fortunes = os.path.join(root, "usr/share/games/fortunes")
        os.makedirs(fortunes)
        with open(os.path.join(fortunes, "wisdom"), "w") as f:
            f.write(PROSE + "\n%\nA stitch in time saves nine, or so they say.\n%\nx = y + 1; z();\n%\n")
        with open(os.path.join(fortunes, "wisdom.dat"), "wb") as f:
            f.write(b"\0\1binary index")
        jargon = os.path.join(root, "usr/share/doc/jargon-text")
        os.makedirs(jargon)
        with gzip.open(os.path.join(jargon, "jargon.txt.gz"), "wt") as f:
            f.write("A {hacker} is a person who enjoys exploring the details of systems.\n\n"
                    "The quick brown fox jumps over the lazy dog near the river bank.\n\n")

    def run_extract(self, root, out, jobs):
        stats = out + ".json"
        subprocess.run([sys.executable, os.path.join(CORPUS_DIR, "extract_corpus.py"), "--root", root,
                        "--out", out, "--sources", "jargon,fortunes", "--jobs", str(jobs), "--stats", stats],
                       check=True, stderr=subprocess.DEVNULL)
        with open(stats) as f:
            return json.load(f)

    def test_documents_filtered_and_deduplicated_across_sources(self):
        with tempfile.TemporaryDirectory() as d:
            root = os.path.join(d, "root")
            self.make_root(root)
            stats = self.run_extract(root, os.path.join(d, "docs"), jobs=2)
            with open(os.path.join(d, "docs/jargon/jargon_00000.txt")) as f:
                jargon = f.read()
            with open(os.path.join(d, "docs/fortunes/fortunes_wisdom_00000.txt")) as f:
                fortunes = f.read()
            self.assertEqual(jargon, "A hacker is a person who enjoys exploring the details of systems.\n\n" + PROSE + "\n")
            # The fox sentence appeared in jargon first (source order), so fortunes drops it.
            self.assertEqual(fortunes, "A stitch in time saves nine, or so they say.\n")
            self.assertEqual(stats["sources"]["fortunes"]["dropped_duplicate"], 1)
            self.assertEqual(stats["sources"]["fortunes"]["dropped_not_prose"], 1)
            self.assertEqual(sorted(os.listdir(os.path.join(d, "docs"))), ["fortunes", "jargon"])
            # Same output with one job.
            self.run_extract(root, os.path.join(d, "docs1"), jobs=1)
            with open(os.path.join(d, "docs1/fortunes/fortunes_wisdom_00000.txt")) as f:
                self.assertEqual(f.read(), fortunes)


if __name__ == "__main__":
    unittest.main()
