"""C and C++ sources shipped as package data, and the build cache that compiles them."""
