// Ground truth for Objective-C method names (issue 20, item 5): two root classes, a category of
// one and a category of a class another image defines,
// compiled for Mach-O without an SDK (no Foundation: `objc_root_class` declares the roots).

__attribute__((objc_root_class))
@interface Counter {
    int n;
}
- (int)increment;
- (int)value;
+ (id)make;
@end

@implementation Counter
- (int)increment {
    return ++n;
}
- (int)value {
    return n;
}
+ (id)make {
    return 0;
}
@end

@interface Counter (Extra)
- (int)twice;
+ (int)limit;
@end

@implementation Counter (Extra)
- (int)twice {
    return 2 * n;
}
+ (int)limit {
    return 99;
}
@end

__attribute__((objc_root_class))
@interface Pair {
    int a, b;
}
- (int)sum:(int)extra;
+ (int)arity;
@end

@implementation Pair
- (int)sum:(int)extra {
    return a + b + extra;
}
+ (int)arity {
    return 2;
}
@end

// A class this image does not define: its category reaches it through a bind to
// `_OBJC_CLASS_$_NSObject` (resolved at load time under `-undefined dynamic_lookup`).
__attribute__((objc_root_class))
@interface NSObject
@end

@interface NSObject (Probe)
- (int)probe;
+ (int)kind;
@end

@implementation NSObject (Probe)
- (int)probe {
    return 7;
}
+ (int)kind {
    return 8;
}
@end
