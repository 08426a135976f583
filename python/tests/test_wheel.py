"""The installable package (python/flashtrain_build.py, what `pip install
./python` builds): the wheel carries the extension and the kernels' shared
library, and the installed extension loads the library beside it (its RUNPATH
starts with $ORIGIN), not the one in the build tree."""
import os
import re
import subprocess
import sys
import tempfile
import unittest
import zipfile
from pathlib import Path

PYTHON_DIR = Path(__file__).resolve().parents[1]  # python/: the package and its build backend


class WheelTest(unittest.TestCase):
    def setUp(self):
        build = os.environ.get("FLASHTRAIN_BUILD_DIR")
        if not build or not (Path(build) / "python" / "_C.so").is_file():
            self.skipTest("needs a build: FLASHTRAIN_BUILD_DIR with python/_C.so")

    def test_the_installed_extension_loads_the_kernels_the_wheel_carries(self):
        sys.path.insert(0, str(PYTHON_DIR))
        try:
            import flashtrain_build
        finally:
            sys.path.remove(str(PYTHON_DIR))
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            wheel = flashtrain_build.build_wheel(str(folder))
            with zipfile.ZipFile(folder / wheel) as archive:
                names = archive.namelist()
                self.assertIn("flashtrain/_C.so", names)
                self.assertIn("flashtrain/libflashrnn_ops.so", names)
                archive.extractall(folder / "site")
            # A fresh interpreter that sees only the unpacked wheel: which
            # libflashrnn_ops.so did importing flashtrain map?
            probe = ("import re, flashtrain\n"
                     "print(sorted(set(re.findall(r'\\S+/libflashrnn_ops\\.so', open('/proc/self/maps').read()))))")
            env = {k: v for k, v in os.environ.items() if k not in ("FLASHTRAIN_LIBRARY", "PYTHONPATH")}
            env["PYTHONPATH"] = str(folder / "site")
            run = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                                 timeout=600)
            self.assertEqual(run.returncode, 0, run.stderr[-3000:])
            carried = (folder / "site" / "flashtrain" / "libflashrnn_ops.so").resolve()
            self.assertEqual(run.stdout.strip(), str([str(carried)]))


if __name__ == "__main__":
    unittest.main()
