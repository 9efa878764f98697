"""Minimal safetensors reader and writer (F32 and BF16) for the spec cases.

File layout: an 8-byte little-endian header length n, n bytes of JSON mapping each tensor name to
{"dtype", "shape", "data_offsets": [begin, end]} (offsets into the data after the header; an optional
"__metadata__" entry holds strings), then the tensor data, little-endian, row-major.
"""
import json
import struct

import numpy as np


def load(path):
    """Return {name: float32 array}; BF16 tensors are widened to float32 exactly."""
    with open(path, 'rb') as f:
        data = f.read()
    (header_len,) = struct.unpack('<Q', data[:8])
    header = json.loads(data[8:8 + header_len])
    body = data[8 + header_len:]
    tensors = {}
    for name, entry in header.items():
        if name == '__metadata__':
            continue
        begin, end = entry['data_offsets']
        raw = body[begin:end]
        if entry['dtype'] == 'F32':
            values = np.frombuffer(raw, '<f4').astype(np.float32)
        elif entry['dtype'] == 'BF16':
            values = (np.frombuffer(raw, '<u2').astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f'{path}: {name}: unsupported dtype {entry["dtype"]}')
        tensors[name] = values.reshape(entry['shape'])
    return tensors


def save(path, tensors, dtype='F32'):
    """Write {name: array} as F32, or as BF16 (each float32 truncated to its top 16 bits)."""
    header = {'__metadata__': {'format': 'pt'}}
    blobs = []
    offset = 0
    for name, array in tensors.items():
        values = np.ascontiguousarray(array, '<f4')
        if dtype == 'BF16':
            blob = (values.view('<u4') >> 16).astype('<u2').tobytes()
        elif dtype == 'F32':
            blob = values.tobytes()
        else:
            raise ValueError(f'unsupported dtype {dtype}')
        header[name] = {'dtype': dtype, 'shape': list(values.shape),
                        'data_offsets': [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    header_bytes = json.dumps(header).encode()
    header_bytes += b' ' * (-len(header_bytes) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(header_bytes)))
        f.write(header_bytes)
        for blob in blobs:
            f.write(blob)
