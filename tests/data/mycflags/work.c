long work(long n) {
    long s = 0;
    for (long i = 0; i < n; ++i)
        s += (i % 7 == 0) ? i / 3 : i ^ 5;
    return s;
}
