# Writes OUT: a C file defining `const char NAME[]` and `const size_t NAME_len` with the bytes
# of IN (for documents served by walklistd, e.g. the OpenAPI description).
file(READ ${IN} hex HEX)
string(LENGTH "${hex}" hex_len)
math(EXPR len "${hex_len} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
file(WRITE ${OUT} "/* Generated from ${IN} by cmake/embed_file.cmake. */\n#include <stddef.h>\n"
     "const char ${NAME}[] = {${bytes} 0x00};\nconst size_t ${NAME}_len = ${len};\n")
