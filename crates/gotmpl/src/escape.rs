//! Go's html/js/urlquery escapers (being written).
