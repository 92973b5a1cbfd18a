/* Libraries whose __tvm_dev_mblob is corrupt in one way each (one library per BAD_BLOB_*
 * definition, see CMakeLists.txt): loading any of them must fail with an error naming the file
 * and the fault. They are also seeds for the packed-import-blob fuzz target. */
#define B(x, k) (unsigned char)(((unsigned long long)(x) >> (8 * (k))) & 0xff)
#define U64(x) B(x, 0), B(x, 1), B(x, 2), B(x, 3), B(x, 4), B(x, 5), B(x, 6), B(x, 7)
#define LIB U64(4), '_', 'l', 'i', 'b'
#define TREE U64(12), '_', 'i', 'm', 'p', 'o', 'r', 't', '_', 't', 'r', 'e', 'e'

__attribute__((visibility("default"))) const unsigned char __tvm_dev_mblob[] = {
#if defined(BAD_BLOB_UNKNOWN_KEY)
    /* one module of a type nobody registered a loader for */
    U64(28), U64(1), U64(12), 'N', 'o', 'S', 'u', 'c', 'h', 'M', 'o', 'd', 'u', 'l', 'e',
#elif defined(BAD_BLOB_TRUNCATED)
    /* a type key announced longer than the blob */
    U64(20), U64(1), U64(100), 'a', 'b', 'c', 'd',
#elif defined(BAD_BLOB_SIZE_OVERFLOW)
    /* a payload size far beyond the symbol */
    U64(0xFFFFFFFFFFFFFFF0ull),
    U64(1),
    LIB,
#elif defined(BAD_BLOB_CYCLE)
    /* the library imports itself */
    U64(8 + 12 + 20 + 8 + 16 + 8 + 8), U64(2), LIB, TREE, U64(2), U64(0), U64(1), U64(1), U64(0),
#elif defined(BAD_BLOB_BAD_CHILD)
    /* an import of module 5 of 1 */
    U64(8 + 12 + 20 + 8 + 16 + 8 + 8), U64(2), LIB, TREE, U64(2), U64(0), U64(1), U64(1), U64(5),
#elif defined(BAD_BLOB_FACTORY_TRUNCATED)
    /* a GraphExecutorFactory whose graph JSON is cut short */
    U64(8 + 8 + 20 + 8 + 2),
    U64(1),
    U64(20),
    'G',
    'r',
    'a',
    'p',
    'h',
    'E',
    'x',
    'e',
    'c',
    'u',
    't',
    'o',
    'r',
    'F',
    'a',
    'c',
    't',
    'o',
    'r',
    'y',
    U64(1000),
    '{',
    '}',
#else
#error "define one BAD_BLOB_* kind"
#endif
};
