def scale_add(x, w):
    return x * w + 1.0
