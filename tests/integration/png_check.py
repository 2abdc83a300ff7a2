#!/usr/bin/env python3
"""Reads back what rsvg-convert rendered: a PNG decoded with zlib and struct only
(8-bit RGB or RGBA, not interlaced, as librsvg writes them), so the tests check the
image itself. Usage:
  png_check.py size PNG W H                        the image is W x H
  png_check.py count PNG X0 Y0 X1 Y1 #RRGGBB MIN   at least MIN pixels of the box are
                                                   that colour (each channel within 12)
  png_check.py family PNG X Y green|red|grey       the pixel at X,Y is of that family
  png_check.py differ PNG X1 Y1 X2 Y2 MIN          the two pixels' colours are more than
                                                   MIN apart (Euclidean, in RGB)
Exits 0 when the check holds, 1 (with the reason) when it does not."""
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise SystemExit(f"{path}: depth {depth} colour type {ctype} not handled")
            bpp = 4 if ctype == 6 else 3
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(idat)
    stride, rows, prev, i = w * bpp, [], bytearray(w * bpp), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def pixel(img, x, y):
    w, h, bpp, rows = img
    r, g, b = rows[y][x * bpp:x * bpp + 3]
    a = rows[y][x * bpp + 3] if bpp == 4 else 255
    # over white, as a viewer shows it
    return tuple((v * a + 255 * (255 - a)) // 255 for v in (r, g, b))


def main(argv):
    cmd, path = argv[1], argv[2]
    img = decode(path)
    if cmd == "size":
        want = (int(argv[3]), int(argv[4]))
        if img[:2] != want:
            raise SystemExit(f"{path}: {img[0]}x{img[1]}, wanted {want[0]}x{want[1]}")
    elif cmd == "count":
        x0, y0, x1, y1 = map(int, argv[3:7])
        col = tuple(int(argv[7][k:k + 2], 16) for k in (1, 3, 5))
        n = sum(1 for y in range(y0, y1) for x in range(x0, x1)
                if all(abs(p - q) <= 12 for p, q in zip(pixel(img, x, y), col)))
        if n < int(argv[8]):
            raise SystemExit(f"{path}: {n} pixels of {argv[7]} in the box, wanted {argv[8]}+")
        print(f"{argv[7]}: {n} pixels")
    elif cmd == "family":
        r, g, b = pixel(img, int(argv[3]), int(argv[4]))
        fam = argv[5]
        ok = {"green": g > r + 30 and g > b + 10,
              "red": r > g + 30 and r > b + 30,
              "grey": abs(r - g) < 8 and abs(g - b) < 8 and 120 < r < 230}[fam]
        if not ok:
            raise SystemExit(f"{path}: pixel {argv[3]},{argv[4]} is {(r, g, b)}, not {fam}")
    elif cmd == "differ":
        a = pixel(img, int(argv[3]), int(argv[4]))
        b = pixel(img, int(argv[5]), int(argv[6]))
        dist = sum((p - q) ** 2 for p, q in zip(a, b)) ** 0.5
        if not dist > float(argv[7]):
            raise SystemExit(f"{path}: {a} and {b} are {dist:.1f} apart, wanted more than {argv[7]}")
        print(f"{a} and {b}: {dist:.1f} apart")
    else:
        raise SystemExit(f"unknown check {cmd}")


if __name__ == "__main__":
    main(sys.argv)
