"""A PEP 517 build backend that packs the already-built extension into a wheel.

The extension comes from the CMake build (target flashtrain_torch):
$FLASHTRAIN_BUILD_DIR/python/_C.so, by default <repository>/build/python/_C.so,
with the kernels' shared library it loads (flashrnn_ops/libflashrnn_ops.so),
which the wheel puts beside it (the extension looks there first: $ORIGIN).
Nothing is compiled here. The wheel's tag is py3-none-<platform>: the library
links libtorch, not libpython, so it fits every Python the torch wheel serves.
"""
import base64
import hashlib
import os
import sysconfig
import zipfile
from pathlib import Path

NAME = "flashtrain"
VERSION = "0.1.0"
HERE = Path(__file__).resolve().parent
METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: flashtrain's ahead-of-time FlashRNN-style recurrent kernels and scan as torch ops
Requires-Python: >=3.9
"""


# The built files the package carries: its name in the package <- its path in the build.
LIBRARIES = {"_C.so": Path("python/_C.so"), "libflashrnn_ops.so": Path("flashrnn_ops/libflashrnn_ops.so")}


def _library(relative: Path) -> Path:
    build = Path(os.environ.get("FLASHTRAIN_BUILD_DIR", HERE.parent / "build"))
    library = build / relative
    if not library.is_file():
        raise RuntimeError(
            f"flashtrain: {library} is missing; build it first "
            "(cmake --build build --target flashtrain_torch, or bash scripts/setup.sh), "
            "or set FLASHTRAIN_BUILD_DIR to the CMake build folder")
    return library


def _tag() -> str:
    return "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    files = {}
    for path in sorted((HERE / NAME).glob("*.py")):
        files[f"{NAME}/{path.name}"] = path.read_bytes()
    for name, relative in LIBRARIES.items():
        files[f"{NAME}/{name}"] = _library(relative).read_bytes()
    dist_info = f"{NAME}-{VERSION}.dist-info"
    files[f"{dist_info}/METADATA"] = METADATA.encode()
    files[f"{dist_info}/WHEEL"] = (
        f"Wheel-Version: 1.0\nGenerator: flashtrain_build\nRoot-Is-Purelib: false\n"
        f"Tag: {_tag()}\n").encode()
    files[f"{dist_info}/top_level.txt"] = f"{NAME}\n".encode()
    record = [_record_line(name, data) for name, data in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel_name = f"{NAME}-{VERSION}-{_tag()}.whl"
    # Stored, not deflated: the libraries are most of the wheel and deflating them is slow.
    with zipfile.ZipFile(Path(wheel_directory) / wheel_name, "w", zipfile.ZIP_STORED) as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
    return wheel_name
